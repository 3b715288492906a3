-- TPC-H Q6: Forecasting Revenue Change Query, with the validation substitution parameters of the
-- TPC-H 2.18 specification (Clause 2.4.6.4).
select
	sum(l_extendedprice * l_discount) as revenue
from
	lineitem
where
	l_shipdate >= date '1994-01-01'
	and l_shipdate < date '1994-01-01' + interval '1' year
	and l_discount between 0.06 - 0.01 and 0.06 + 0.01
	and l_quantity < 24;
