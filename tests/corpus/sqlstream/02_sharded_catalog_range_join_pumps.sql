-- source: github NigelThomas/sqlstream-flink:catalog.distributed.sql, commit d8e9dac0e545b72561f06cb834edb3ed27748c85 (2022-10-25)
-- modeled on: distributed (sharded) catalog: FILE_SERVER foreign streams with a $(PARAM) DEFAULT option, ROWTIME promotion by cast, native streams filled by pumps STOPPED OPTIONS (...), shard filters MOD(key, $(num_shards as INT)) = $(shard as int), a RANGE BETWEEN aggregate, an INNER JOIN ... OVER (RANGE INTERVAL '5' MINUTE PRECEDING) to a quoted shard view, two pumps into one stream, ALTER PUMP ... SET
-- dialect: sqlstream
-- check: 02_sharded_catalog_range_join_pumps.sql:114:47: error: $(SHARD ...) is an s-Server substitution parameter, whose value s-Server's deployment gives (a sharded pump's OPTIONS): streamjoin substitutes none in a query
-- fair rejection: its two pumps per stream fill it together (fan-in, read since issue 68), but its views filter each shard by $(shard as INT), a parameter only s-Server's sharded deployment substitutes per pump (OPTIONS num_shards/shard)

CREATE OR REPLACE SCHEMA METER;
ALTER PUMP METER.* STOP;
DROP SCHEMA METER CASCADE;
CREATE OR REPLACE SCHEMA METER;
SET SCHEMA 'METER';
SET PATH 'METER';

CREATE OR REPLACE FOREIGN STREAM Usage_fs(
load_ts VARCHAR(32),
eventtime VARCHAR(32),
usageid VARCHAR(8),
bearerid int,
recordkind VARCHAR(32),
txbytes VARCHAR(16),
txframes VARCHAR(16),
rxbytes VARCHAR(16),
rxframes VARCHAR(16),
txlostbytes VARCHAR(16),
txlostframes VARCHAR(16),
rxlostbytes VARCHAR(16),
rxlostframes VARCHAR(16),
spare1 VARCHAR(4),
day_key VARCHAR(16)
)
SERVER FILE_SERVER
OPTIONS (
PARSER 'CSV',
CHARACTER_ENCODING 'UTF-8',
SKIP_HEADER 'false',
DIRECTORY $(LANDING_DIR) DEFAULT '/var/meter',
FILENAME_PATTERN 'usage_.*csv' 
);

CREATE OR REPLACE FOREIGN STREAM Attach_fs
(
load_ts TIMESTAMP,
bearerid int,
eventtime VARCHAR(32),
recordkind VARCHAR(32),
imsi_no VARCHAR(16),
sectorref VARCHAR(16),
spare1 VARCHAR(4),
day_key VARCHAR(16)
)
SERVER FILE_SERVER
OPTIONS (
PARSER 'CSV',
CHARACTER_ENCODING 'UTF-8',
SEPARATOR ',',
--SKIP_HEADER 'true',
--FILE_TYPE 'none',
DIRECTORY '/var/meter',
FILENAME_PATTERN 'attach_.*'
);

-- Usage ingestion pipeline
CREATE OR REPLACE VIEW Usage_ingestion_step_1 AS
SELECT STREAM 
        CASE WHEN CHAR_LENGTH(eventtime) = 22 THEN SUBSTRING(eventtime, 1, 19) || '.000' ELSE eventtime END AS eventtime,
	bearerid,
        CAST(txbytes AS BIGINT) + CAST(rxbytes AS BIGINT)  +
        CAST(txlostbytes AS BIGINT) + CAST(rxlostbytes AS BIGINT) as Volume,
        CAST(txframes AS BIGINT) + CAST(rxframes AS BIGINT) +
        CAST(txlostframes AS BIGINT) + CAST(rxlostframes AS BIGINT) as Frames
FROM Usage_fs;

CREATE OR REPLACE VIEW Usage_ingestion_step_2 AS
    SELECT STREAM CAST(eventtime AS TIMESTAMP) AS ROWTIME, *
    FROM Usage_ingestion_step_1 AS input;

CREATE OR REPLACE STREAM Usage_ingestion_out_ns (
eventtime VARCHAR(32),
bearerid int,
volume BIGINT,
frames BIGINT
);

-- Attach ingestion pipeline
CREATE OR REPLACE VIEW Attach_ingestion_step_1 AS
SELECT STREAM bearerid,
CASE WHEN CHAR_LENGTH(eventtime) = 22 THEN SUBSTRING(eventtime, 1, 19) || '.000' ELSE eventtime END AS eventtime,
sectorref
from Attach_fs;

CREATE OR REPLACE VIEW Attach_ingestion_step_2 AS
SELECT STREAM CAST(eventtime as TIMESTAMP) as ROWTIME, bearerid, eventtime, sectorref as sectorid
FROM Attach_ingestion_step_1;

CREATE OR REPLACE STREAM Attach_ingestion_out_ns
(
bearerid int,
eventtime VARCHAR(32),
sectorid VARCHAR(16)
);

CREATE OR REPLACE PUMP attach_pump STOPPED OPTIONS ("llvm.enabled" 'true') AS
INSERT INTO Attach_ingestion_out_ns SELECT STREAM * FROM Attach_ingestion_step_2;

-- Agg pipeline
CREATE OR REPLACE VIEW Usage_agg_step_0 AS
    SELECT STREAM *
    FROM Usage_ingestion_out_ns AS input
    WHERE MOD(bearerid, $(num_shards as INT)) = $(shard as int)
    ;

CREATE OR REPLACE VIEW "Usage_agg_Attach_shard_view" AS
SELECT STREAM * FROM Attach_ingestion_out_ns 
WHERE MOD(bearerid, $(num_shards as INT)) = $(shard as INT)
;

CREATE OR REPLACE VIEW Usage_agg_step_1 AS
SELECT STREAM bearerid,
Min(Volume) OVER w as minVolume, max(Volume) OVER w as maxVolume,
Sum(Volume) OVER w as sumVolume, Count(Volume) OVER w as countVolume
FROM Usage_agg_step_0 as s 
WINDOW w AS (PARTITION BY bearerid
ORDER BY FLOOR(s.ROWTIME TO MINUTE)
RANGE BETWEEN INTERVAL '60' MINUTE PRECEDING
AND INTERVAL '1' MINUTE PRECEDING);

CREATE OR REPLACE VIEW Usage_agg_step_2 AS
SELECT STREAM lhs.bearerid as bearerid, sectorid, minVolume, maxVolume, sumVolume, countVolume
from Usage_agg_step_1 as lhs
INNER JOIN "Usage_agg_Attach_shard_view" OVER (RANGE INTERVAL '5' MINUTE PRECEDING) as rhs
-- INNER JOIN Attach_step_4 OVER (PARTITION BY SESSION ON bearerid TIMEOUT AFTER INTERVAL '1' HOUR ROWS CURRENT ROW) as rhs
ON (lhs.bearerid = rhs.bearerid );

CREATE OR REPLACE STREAM Usage_agg_out_ns (
bearerid int,
sectorid varchar(16),
minVolume bigint,
maxVolume bigint,
sumVolume bigint,
countVolume bigint
);

CREATE OR REPLACE VIEW datarate_view AS
SELECT STREAM CURRENT_ROW_TIMESTAMP AS ROWTIME, 1 FROM METER.Usage_ingestion_out_ns;

CREATE OR REPLACE PUMP Usage_pump_0 STOPPED OPTIONS (landing_dir '/var/meter') AS
INSERT INTO Usage_ingestion_out_ns SELECT STREAM * FROM Usage_ingestion_step_2;

CREATE OR REPLACE PUMP Usage_pump_1 STOPPED OPTIONS (landing_dir '/var/meter') AS
INSERT INTO Usage_ingestion_out_ns SELECT STREAM * FROM Usage_ingestion_step_2;

CREATE OR REPLACE PUMP p0 STOPPED OPTIONS (num_shards '2', shard '0') AS
INSERT INTO Usage_agg_out_ns SELECT STREAM * FROM Usage_agg_step_2;

CREATE OR REPLACE PUMP p1 STOPPED OPTIONS (num_shards '2', shard '1') AS
INSERT INTO Usage_agg_out_ns SELECT STREAM * FROM Usage_agg_step_2;

ALTER PUMP METER.* SET "llvm.enabled" = 'true';

-- the filter that picks each shard's rows
-- WHERE MOD(bearerid, $(num_shards as INT)) = $(shard as INT)
-- each pump carries its own shard number
ALTER PUMP METER.p0 SET shard = '0';
ALTER PUMP METER.p1 SET shard = '1';
