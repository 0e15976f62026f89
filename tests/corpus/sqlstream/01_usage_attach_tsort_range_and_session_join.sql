-- source: github NigelThomas/sqlstream-flink:sqlstream.sql, commit e8f0aebed66bf4b5d2593029237b8c1908abd71f (2022-11-16)
-- modeled on: s-Server side of an s-Server/Flink benchmark: two FILE_SERVER foreign streams (STATIC_FILES), casts, t-sorted views (ORDER BY ... WITHIN), partitioned RANGE BETWEEN aggregates, an INNER JOIN ... OVER (RANGE INTERVAL '5' MINUTE PRECEDING) and a session join OVER (PARTITION BY SESSION ON ... TIMEOUT AFTER ... ROWS CURRENT ROW); unquoted mixed-case names, views only
-- dialect: sqlstream
-- check: 01_usage_attach_tsort_range_and_session_join.sql:165:45: error: session windows (PARTITION BY SESSION ON ... TIMEOUT AFTER ...) are not supported in a join
-- fair rejection: its session join (PARTITION BY SESSION ... TIMEOUT AFTER ... ROWS CURRENT ROW) has no definition in SEMANTICS.md or the seeds; its t-sorts (ORDER BY ... WITHIN) and RANGE joins are read
CREATE OR REPLACE SCHEMA METER;
ALTER PUMP METER.* STOP;
DROP SCHEMA METER CASCADE;
CREATE OR REPLACE SCHEMA METER;
SET SCHEMA 'METER';
SET PATH 'METER';

CREATE OR REPLACE FOREIGN STREAM usage_fs(
load_ts VARCHAR(32),
eventtime VARCHAR(32),
usageid VARCHAR(8),
bearerid VARCHAR(16),
recordkind VARCHAR(32),
spare00 VARCHAR(4),
txbytes VARCHAR(16),
txframes VARCHAR(16),
rxbytes VARCHAR(16),
rxframes VARCHAR(16),
txlostbytes VARCHAR(16),
txlostframes VARCHAR(16),
rxlostbytes VARCHAR(16),
rxlostframes VARCHAR(16),
appname VARCHAR(32),
spare1 VARCHAR(4),
day_key VARCHAR(16)
)
SERVER FILE_SERVER
OPTIONS (
-- static files end the stream at end of file, so a timed run finishes
STATIC_FILES 'true',
PARSER 'CSV',
CHARACTER_ENCODING 'UTF-8',
SKIP_HEADER 'false',
DIRECTORY '/var/meter',
FILENAME_PATTERN 'usage_all.csv' 
);

CREATE OR REPLACE FOREIGN STREAM attach_fs
(
load_ts VARCHAR(32),
bearerid VARCHAR(8),
eventtime VARCHAR(32),
recordkind VARCHAR(32),
imsi_no VARCHAR(16),
msisdn_no VARCHAR(16),
sectorref VARCHAR(16),
spare1 VARCHAR(4),
day_key VARCHAR(16)
)
SERVER FILE_SERVER
OPTIONS (
STATIC_FILES 'true',
PARSER 'CSV',
CHARACTER_ENCODING 'UTF-8',
SEPARATOR ',',
--SKIP_HEADER 'true',
--FILE_TYPE 'none',
DIRECTORY '/var/meter',
FILENAME_PATTERN 'attach_.*'
);

CREATE OR REPLACE VIEW parse_view AS
SELECT STREAM * FROM usage_fs;

CREATE OR REPLACE VIEW usage_step_1 AS
    SELECT STREAM bearerid,
        CASE WHEN CHAR_LENGTH(eventtime) = 22 THEN SUBSTRING(eventtime, 1, 19) || '.000' ELSE eventtime END AS eventtime,
        CAST(txbytes AS BIGINT) as txbytes, CAST(rxbytes AS BIGINT) as rxbytes, 
        CAST(txframes AS BIGINT) as txframes, CAST(rxframes AS BIGINT) as rxframes, 
        CAST(txlostbytes AS BIGINT) as txlostbytes, CAST(rxlostbytes AS BIGINT) as rxlostbytes, 
        CAST(txlostframes AS BIGINT) as txlostframes, CAST(rxlostframes AS BIGINT) as rxlostframes
    FROM usage_fs AS input;

CREATE OR REPLACE VIEW attach_step_1 AS
SELECT STREAM bearerid,
CAST (
    CASE WHEN CHAR_LENGTH(eventtime) = 22 THEN SUBSTRING(eventtime, 1, 19) || '.000' 
        ELSE eventtime 
    END 
    AS TIMESTAMP) AS eventtime,
    sectorref
from attach_fs;

CREATE OR REPLACE VIEW usage_step_2 AS
    SELECT STREAM bearerid as bearerid
         , CAST(eventtime as TIMESTAMP) as eventtime
         , txbytes + rxbytes + txlostbytes + rxlostbytes AS Volume
         , txframes + rxframes + txlostframes + rxlostframes AS Frames
    FROM usage_step_1 AS input;

-- t-sort the usage records here
CREATE OR REPLACE VIEW usage_step_3 AS
SELECT STREAM bearerid
     , s.eventtime AS ROWTIME
     , Volume
     , Frames
FROM usage_step_2 s
ORDER BY s.eventtime WITHIN INTERVAL '30' SECOND;

CREATE OR REPLACE VIEW projection_view AS
SELECT STREAM * FROM usage_step_3;


-- t-sort the attach records here
CREATE OR REPLACE VIEW attach_step_2 AS
SELECT STREAM bearerid
     , eventtime as ROWTIME
     , sectorref as sectorid
FROM attach_step_1
ORDER BY eventtime WITHIN INTERVAL '30' SECOND;

CREATE OR REPLACE VIEW agg_view AS
SELECT STREAM bearerid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM projection_view as s 
WINDOW w AS (PARTITION BY bearerid
            ORDER BY s.ROWTIME
            RANGE BETWEEN INTERVAL '60' MINUTE PRECEDING AND CURRENT ROW);

-- the same aggregate over 60m, 15m and 1m windows

CREATE OR REPLACE VIEW agg_view_60m AS
SELECT STREAM bearerid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM projection_view as s 
WINDOW w AS (PARTITION BY bearerid
            ORDER BY s.ROWTIME
            RANGE BETWEEN INTERVAL '60' MINUTE PRECEDING AND CURRENT ROW);

CREATE OR REPLACE VIEW agg_view_15m AS
SELECT STREAM bearerid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM projection_view as s 
WINDOW w AS (PARTITION BY bearerid
            ORDER BY s.ROWTIME
            RANGE BETWEEN INTERVAL '15' MINUTE PRECEDING AND CURRENT ROW);

CREATE OR REPLACE VIEW agg_view_1m AS
SELECT STREAM bearerid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM projection_view as s 
WINDOW w AS (PARTITION BY bearerid
            ORDER BY s.ROWTIME
            RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW);

--Join Query
CREATE OR REPLACE VIEW join_view AS
SELECT STREAM lhs.bearerid as bearerid, sectorid, Volume, Frames
from projection_view as lhs
INNER JOIN attach_step_2 OVER (RANGE INTERVAL '5' MINUTE PRECEDING) as rhs
ON (lhs.bearerid = rhs.bearerid );

CREATE OR REPLACE VIEW session_join_view AS
SELECT STREAM lhs.bearerid as bearerid, sectorid, Volume, Frames
from projection_view as lhs
INNER JOIN attach_step_2 OVER (PARTITION BY SESSION ON bearerid TIMEOUT AFTER INTERVAL '1' HOUR ROWS CURRENT ROW) as rhs
ON (lhs.bearerid = rhs.bearerid );

CREATE OR REPLACE VIEW join_n_agg_view AS
SELECT STREAM sectorid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM join_view as s 
WINDOW w AS (PARTITION BY sectorid
             ORDER BY s.ROWTIME
             RANGE BETWEEN INTERVAL '60' MINUTE PRECEDING AND CURRENT ROW)
;

CREATE OR REPLACE VIEW Join_n_agg_view2 AS
SELECT STREAM sectorid, Volume, 
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM Join_view as s 
WINDOW w AS (PARTITION BY sectorid
            ORDER BY FLOOR(s.ROWTIME TO MINUTE)
            RANGE BETWEEN INTERVAL '60' MINUTE PRECEDING AND INTERVAL '1' MINUTE PRECEDING)
;
