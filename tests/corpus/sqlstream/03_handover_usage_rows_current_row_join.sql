-- source: github NigelThomas/ucp:install.sql, commit 74a3a5e832e9e4c0bb3f3324b0d4133c2993013f (2021-06-27)
-- modeled on: splitting data-usage sessions by the cell a subscriber was in: sqlline !set force / !outputformat directives, SET SCHEMA '"x"', FILE_SERVER foreign streams with quoted options, VALUES splitter views, LAG over a partitioned RANGE window, a stream-stream JOIN ... over (partition by ... rows current row), JOIN ... using ("dummy") to VALUES views, STEP(... BY ...), PERIOD OVERLAPS, a native stream filled by a pump STOPPED, ORDER BY rowtime, a final SELECT STREAM
-- dialect: sqlstream
-- check: ok
!set force on
ALTER PUMP "sectormap".* stop;
DROP SCHEMA "sectormap" CASCADE;
!set force off
CREATE OR REPLACE SCHEMA "sectormap";

SET SCHEMA '"sectormap"';


CREATE OR REPLACE FOREIGN STREAM "handover_fs"
(
    "seen_time" TIMESTAMP not null,
    "subscriber" VARCHAR(8),
    "sector" VARCHAR(8)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" ',',
        "SKIP_HEADER" 'true',
        "DIRECTORY" '/srv/sectormap',
        "FILENAME_PATTERN" 'handover.csv'

);


-- CREATE OR REPLACE STREAM "handover_ns"
-- (
--     "subscriber" VARCHAR(8),
--     "sector" VARCHAR(8),
--     "seen_time" TIMESTAMP
-- );


-- CREATE OR REPLACE PUMP "handover_results" STOPPED AS
-- INSERT INTO "handover_ns" 
-- ("seen_time", "subscriber","sector")
-- select stream "seen_time","subscriber","sector"
-- from "handover_fs";


CREATE OR REPLACE FOREIGN STREAM "usage_fs"
(
    "usage_start_time" TIMESTAMP NOT NULL,
    "usage_end_time" TIMESTAMP NOT NULL,
    "usage_id" VARCHAR(8),
    "subscriber" VARCHAR(8),
    "volume" BIGINT
)
SERVER "FILE_SERVER"
OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" ',',
        "SKIP_HEADER" 'true',
        "DIRECTORY" '/srv/sectormap',
        "FILENAME_PATTERN" 'usage.csv'

);

-- The row count here must match the number of lags in hist_step_2 and the
-- branches of the case in usage_sector_3: it caps how many sector changes one usage record can span

CREATE OR REPLACE VIEW sectorsplitter ("dummy","rowno")
AS SELECT 1,* from(
    VALUES(0),(1),(2),(3)
);

-- The row count here caps the length of each sub-usage: N * 20 minutes

CREATE OR REPLACE VIEW slotsplitter ("dummy","rowno")
AS SELECT 1,* from(
    VALUES(0),(1),(2),(3),(4),(5)
);


-- CREATE OR REPLACE STREAM "usage_ns"
-- (
--     "usage_start_time" TIMESTAMP NOT NULL,
--     "usage_end_time" TIMESTAMP NOT NULL,
--     "usage_id" VARCHAR(8),
--     "subscriber" VARCHAR(8),
--     "volume" BIGINT
-- );

-- CREATE OR REPLACE PUMP "usage_results" STOPPED AS
-- INSERT INTO "usage_ns" 
--     SELECT STREAM *   
--     FROM "usage_fs";

-- recent sector history of each subscriber

    
create or replace view hist_step_1 as
select stream "seen_time" as rowtime, * 
from "handover_fs";

-- the range interval here must cover the longest usage record allowed

create or replace view hist_step_2 as
select stream "subscriber"
     , "sector" as "sector_00"
     , lag("sector",1) over W as "sector_01"
     , lag("sector",2) over W as "sector_02"
     , lag("sector",3) over W as "sector_03"
     , "seen_time" as "seen_00"
     , lag("seen_time",1) over W as "seen_01"
     , lag("seen_time",2) over W as "seen_02"
     , lag("seen_time",3) over W as "seen_03"
from hist_step_1 s 
window W as (partition by "subscriber" range interval '12' hour preceding)
;

create or replace view usage_step_1 as
select stream "usage_end_time" as rowtime, * 
from "usage_fs";

create or replace view usage_sector_1 AS
select stream u."usage_id"
            , u."usage_start_time"
            , u."usage_end_time"
            , u."volume"
            , 1 as "dummy"
            , h.*
from  usage_step_1 u
JOIN hist_step_2 over (partition by "subscriber" rows current row) h on h."subscriber" = u."subscriber"
;

create or replace view usage_sector_2 AS
select stream u.*,s."rowno"
from usage_sector_1 u JOIN sectorsplitter s using ("dummy")
;

create or replace view usage_sector_3 as
select stream u."subscriber" 
   , u."usage_id"
   , u."usage_start_time"
   , u."usage_end_time"
   , u."volume" as "usage_volume"
   , tsdiff(u."usage_end_time",u."usage_start_time") as "usage_ms"
   , u."usage_id"||'-'||cast("rowno" as varchar(4)) as "sub_usage_id"
   , "rowno"
   , case "rowno"
     when 0 then "sector_00"
     when 1 then "sector_01"
     when 2 then "sector_02"
     when 3 then "sector_03"
     END as "sector"
   , case "rowno"
     when 0 then "seen_00"
     when 1 then "seen_01"
     when 2 then "seen_02"
     when 3 then "seen_03"
     END as "sector_arrival_time"
   , case "rowno"
     when 0 then "usage_end_time"
     when 1 then "seen_00"
     when 2 then "seen_01"
     when 3 then "seen_02"
     END as "sector_departure_time"
from  usage_sector_2 u;

-- materialized so the sub-usage start/end times can be NOT NULL (STEP needs that)

create or replace stream sub_usages 
( "subscriber" VARCHAR(8)
, "usage_id" VARCHAR(8)
, "usage_start_time" TIMESTAMP
, "usage_end_time" TIMESTAMP
, "usage_volume" BIGINT
, "usage_ms" BIGINT
, "sub_usage_id" VARCHAR(16)
, "sector" VARCHAR(8)
, "sub_usage_start_time" TIMESTAMP NOT NULL
, "sub_usage_end_time" TIMESTAMP NOT NULL
, "dummy" INTEGER
);

create or replace pump sub_usage_pump stopped 
as
insert into sub_usages
select stream "subscriber"
    ,"usage_id","usage_start_time","usage_end_time","usage_volume","usage_ms"
    , "sub_usage_id", "sector"
    , case 
      when "sector_arrival_time" < "usage_start_time" then "usage_start_time"
      else "sector_arrival_time" 
      end as "sub_usage_start_time"
    , "sector_departure_time" as "sub_usage_end_time"
    , 1 as "dummy"
from usage_sector_3
where "sector_arrival_time" is not null;


create or replace view usage_slots_1 AS
select stream u.*
     , s."rowno"
     , step("sub_usage_start_time" + (s."rowno" * interval '20' minute) by interval '20' minute) as "slot_start_time"
     , step("sub_usage_start_time" + ((s."rowno" + 1) * interval '20' minute) by interval '20' minute) as "slot_end_time"
from sub_usages u
JOIN slotsplitter s using ("dummy");

create or replace view usage_slots_2 AS
select stream "subscriber","sector"
    ,"usage_id","usage_start_time","usage_end_time","usage_volume","usage_ms"
    ,"sub_usage_id"||'-'||cast("rowno" as varchar(8)) as "usage_slot"
    , case when "slot_start_time" < "sub_usage_start_time" then "sub_usage_start_time" else "slot_start_time" end as "slot_start_time" 
    , case when "slot_end_time" > "sub_usage_end_time" then "sub_usage_end_time" else "slot_end_time" end as "slot_end_time" 
from usage_slots_1
where period("slot_start_time","slot_end_time") overlaps period("sub_usage_start_time", "sub_usage_end_time")
and "slot_start_time" < "slot_end_time"
;

create or replace view usage_slots_3 AS
select stream *
            , tsdiff("slot_end_time","slot_start_time") as "slot_ms"
from usage_slots_2
;

-- all rows of one usage record leave at usage_end_time = rowtime; no re-sort by slot start

create or replace view usage_slots_4 AS
select stream *
    , CAST(CAST("usage_volume" as DOUBLE) * CAST("slot_ms" AS DOUBLE)/CAST("usage_ms" AS DOUBLE) AS BIGINT) as "slot_volume"
from usage_slots_3 s
order by s.rowtime, "usage_id", "slot_start_time"
;


!outputformat csv

select stream rowtime 
    ,"usage_id","usage_start_time", "usage_end_time","usage_volume"
    ,"subscriber","sector"
    ,"usage_slot","slot_start_time","slot_end_time","slot_volume"
    ,sum("slot_volume") over w as "running_volume"
from usage_slots_4
window w as (partition by "usage_id" range interval '0' second preceding);
