--
-- PostgreSQL database dump
--

\restrict IzPisQ89QkrMrk0NytxRIv1Nj00VMlX140UQudAIxxejnIUbFqlfTMKyRXPIWNG

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Data for Name: customers; Type: TABLE DATA; Schema: public; Owner: postgres
--

COPY public.customers (id, name, email, created) FROM stdin;
1	Ann	ann@x.org	2026-12-07
2	Bob	\N	2026-12-07
3	Cé	ce@x.org	2026-12-07
\.


--
-- Data for Name: orders; Type: TABLE DATA; Schema: public; Owner: postgres
--

COPY public.orders (id, customer_id, total, placed, status) FROM stdin;
1	1	10.50	2024-01-02 10:00:00	new
2	1	250.00	2024-02-03 11:00:00	new
3	3	99.99	\N	new
\.


--
-- Name: customers_id_seq; Type: SEQUENCE SET; Schema: public; Owner: postgres
--

SELECT pg_catalog.setval('public.customers_id_seq', 3, true);


--
-- Name: orders_id_seq; Type: SEQUENCE SET; Schema: public; Owner: postgres
--

SELECT pg_catalog.setval('public.orders_id_seq', 3, true);


--
-- PostgreSQL database dump complete
--

\unrestrict IzPisQ89QkrMrk0NytxRIv1Nj00VMlX140UQudAIxxejnIUbFqlfTMKyRXPIWNG

