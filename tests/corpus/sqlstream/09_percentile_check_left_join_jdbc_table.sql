-- source: github NigelThomas/uda:test/rank_buses_ss.sql, commit 2d1b0a9394e07a22978091100089356beb1e3e3d (2021-06-10)
-- modeled on: test of user-defined percentile aggregates against PostgreSQL results: unquoted schema and SET SCHEMA/SET PATH, a FILE_SERVER foreign stream with unquoted option keys, CREATE SERVER ... FOREIGN DATA WRAPPER "SYS_JDBC", a JDBC foreign table declared without columns, ROWTIME promotion, GROUP BY floor(s.rowtime to minute) with quoted UDA calls and ORDER BY, a stream LEFT JOIN to the foreign table on trim(...) = trim(...) AND timestamp equality, a final SELECT STREAM
-- dialect: sqlstream
-- check: ok
-- database: pctcheck (check reads the JDBC foreign table's columns from its catalog, as s-Server does; tests/plan/test_corpus.py creates it)
create or replace schema pctcheck;
set schema 'pctcheck';
set path 'pctcheck';

create or replace foreign stream "vehicles"
( "unit" BIGINT
, "seen_at" TIMESTAMP
, "lat" double
, "lon" double
, "velocity" double
, "heading" integer
, "route" varchar(10)
)
SERVER FILE_SERVER
OPTIONS
( PARSER 'CSV'
, DIRECTORY '/srv/pctcheck/test'
, FILENAME_PATTERN 'vehicles.narrow.csv'
);

CREATE OR REPLACE SERVER "PostgreSQL_DB_1_vehicles"
    FOREIGN DATA WRAPPER "SYS_JDBC"
    OPTIONS (
        "URL" 'jdbc:postgresql://localhost/pctcheck',
        "USER_NAME" 'checker',
        "PASSWORD" 'checkerpw',
        "SCHEMA_NAME" 'public',
        "DIALECT" 'PostgreSQL',
        "JNDI_WRITEBACK" 'true',
        "pollingInterval" '1000',
        "txInterval" '1000',
        "DRIVER_CLASS" 'org.postgresql.Driver'
    );

CREATE OR REPLACE FOREIGN TABLE pg_pct_expected
SERVER "PostgreSQL_DB_1_vehicles"
OPTIONS
( TABLE_NAME 'expected_percentiles'
);

create or replace view tv1 
as select stream "seen_at" as ROWTIME
, floor("seen_at" to minute) as "seen_at"
, "unit", "lat","lon","route","velocity"
from "vehicles"
where "velocity" is not null;

create or replace view tv2 as
select stream "seen_at"
      , "route"
      , count(*) as "ss_count"
      , "PERCENTILE_DISC"("velocity",0.25) as "ss_pctd_25"
      , "PERCENTILE_DISC"("velocity",0.5) as "ss_pctd_50"
      , "PERCENTILE_DISC"("velocity",0.75) as "ss_pctd_75"
      , "PERCENTILE_CONT"("velocity",0.25) as "ss_pctc_25"
      , "PERCENTILE_CONT"("velocity",0.5) as "ss_pctc_50"
      , "PERCENTILE_CONT"("velocity",0.75) as "ss_pctc_75"
from tv1 s
group by floor(s.rowtime to minute),"seen_at","route"
order by floor(s.rowtime to minute),"seen_at","route"
;

create or replace view tv3 as
select stream tv2.*
     , pct."pg_count"
     , pct."pg_pctd_25"
     , pct."pg_pctd_50"
     , pct."pg_pctd_75"
     , pct."pg_pctc_25"
     , pct."pg_pctc_50"
     , pct."pg_pctc_75"
     , pct."velocity_array"
from tv2
left join pg_pct_expected pct
on (trim(tv2."route") = trim(pct."route") AND tv2."seen_at" = pct."rt")
;

create or replace view tv4 as
select stream *
     , abs("ss_pctd_25" - "pg_pctd_25") < 0.0005 as md25
     , abs("ss_pctd_50" - "pg_pctd_50") < 0.0005 as md50
     , abs("ss_pctd_75" - "pg_pctd_75") < 0.0005 as md75
     , abs("ss_pctc_25" - "pg_pctc_25") < 0.0005 as mc25
     , abs("ss_pctc_50" - "pg_pctc_50") < 0.0005 as mc50
     , abs("ss_pctc_75" - "pg_pctc_75") < 0.0005 as mc75
     , "ss_count" = "pg_count" as mcnt
from tv3
;

create or replace view tv5 as
select stream *
from tv4
where not (md25 and md50 and md75 and 
           mc25 and mc50 and mc75 and
           mcnt);


select stream * from tv5;
