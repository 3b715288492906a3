--
-- PostgreSQL database dump
--

\restrict AJavCTH2qL1vSXQBpM35e7X5IxTa4FweyZEmwYk6SVJTxaj9w7Hfs4USRtMzsfH

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
-- Data for Name: items; Type: TABLE DATA; Schema: public; Owner: postgres
--

COPY public.items (id, title, price, active, added, score) FROM stdin;
1	lamp	19.90	t	2024-05-01 12:00:00	0.5
2	desk	120.00	t	\N	\N
3	chair	45.50	t	2024-05-03 08:30:00	2.25
\.


--
-- Data for Name: tags; Type: TABLE DATA; Schema: public; Owner: postgres
--

COPY public.tags (id, item_id, tag) FROM stdin;
1	1	light
2	2	wood
3	3	wood
\.


--
-- Name: items_id_seq; Type: SEQUENCE SET; Schema: public; Owner: postgres
--

SELECT pg_catalog.setval('public.items_id_seq', 3, true);


--
-- Name: tags_id_seq; Type: SEQUENCE SET; Schema: public; Owner: postgres
--

SELECT pg_catalog.setval('public.tags_id_seq', 3, true);


--
-- PostgreSQL database dump complete
--

\unrestrict AJavCTH2qL1vSXQBpM35e7X5IxTa4FweyZEmwYk6SVJTxaj9w7Hfs4USRtMzsfH

