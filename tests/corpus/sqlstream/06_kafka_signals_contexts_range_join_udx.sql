-- source: github NigelThomas/fpp-dev:bps-files/fpp-prepare.sql, commit 69cf5b2daa8aa911f285ba0fa8ea98feed2bfe88 (2020-05-05)
-- modeled on: fraud-scoring preparation: !set force and ALTER PUMP/ALTER STREAM ... RESET of another schema, SET SCHEMA/SET PATH '"quoted-with-dashes"', two KAFKA10_SERVER JSON foreign streams each copied by a pump STOPPED into a native stream, a stream-stream INNER JOIN "signals" OVER (RANGE INTERVAL '1' HOUR PRECEDING) with the window after the name, CREATE JAR + Java table UDX over CURSOR(...), and a pump with an explicit column list into a stream of another schema
-- dialect: sqlstream
-- check: 06_kafka_signals_contexts_range_join_udx.sql:120:28: error: CREATE FUNCTION extractProperties: user-defined functions are not supported (a Java UDX runs inside s-Server; streamjoin runs SQL's built-in functions)
-- fair rejection: its features come from a Java table UDX (CREATE JAR + CREATE FUNCTION ... EXTERNAL NAME) over CURSOR(...); streamjoin runs no Java code
-- declared elsewhere in the original (interface.sql; a native stream that this script's pump fills):
CREATE STREAM "interface"."transactions" ("transaction_id" VARCHAR(64), "device_id" VARCHAR(64), "user_id" VARCHAR(64), "client_app" VARCHAR(64), "event_kind" VARCHAR(64), "browser_name" VARCHAR(64), "os_name" VARCHAR(64), "network_ip" VARCHAR(64), "day_of_week" VARCHAR(64), "hour_of_day" VARCHAR(64), "visitId" VARCHAR(64));

-- prepare.sql
-- the scoring preparation pipeline feeds interface.transactions
--
--
!set force on
alter pump "interface".* stop;
alter stream "interface"."transactions" reset;
!set force off

CREATE OR REPLACE SCHEMA "risk-prep-0.2_v3";
SET SCHEMA '"risk-prep-0.2_v3"';
SET PATH '"risk-prep-0.2_v3"';

-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SOURCE: signals
-- ---------------------------------------------------------------------------------------------------------------------
CREATE OR REPLACE FOREIGN STREAM "signals_raw_fs"
(
    "tenantId" VARCHAR(256),
    "visitId" VARCHAR(64),
    "signals" VARCHAR(1024000),
    "headers" VARCHAR(1024000),
    "geo" VARCHAR(1024000)
)
   SERVER "KAFKA10_SERVER"
   OPTIONS (
       "PARSER" 'JSON',
       "ROW_PATH" '$',
       "tenantId_PATH" '$.tenantId',
       "visitId_PATH" '$.visitId',
       "signals_PATH" '$.signals',
       "headers_PATH" '$.headers',
       "geo_PATH" '$.geo',
       "kafka.consumer.config" '/etc/risk/kafka.properties',
       "SEED_BROKERS" 'localhost:9092',
       "STARTING_TIME" 'LATEST',
       "MAX_POLL_RECORDS" '100',
       "STARTING_OFFSET" '-1',
       "BUFFER_SIZE" '1048576',
       "FETCH_SIZE" '1000000',
       "isolation.level" 'read_uncommitted',
       "TOPIC" 'signals'
   );

CREATE OR REPLACE STREAM "signals"
(
    "tenantId" VARCHAR(256),
    "visitId" VARCHAR(64),
    "signals" VARCHAR(1024000),
    "headers" VARCHAR(1024000),
    "geo" VARCHAR(1024000)
);

CREATE OR REPLACE PUMP "source-to-signals-Pump" STOPPED AS
INSERT INTO "signals"
SELECT STREAM * FROM "signals_raw_fs";




-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SOURCE: contexts
-- ---------------------------------------------------------------------------------------------------------------------

CREATE OR REPLACE FOREIGN STREAM "contexts_raw_fs"
(
    "visitId" VARCHAR(64),
    "verdict" VARCHAR(102400)
)
   SERVER "KAFKA10_SERVER"
   OPTIONS (
       "PARSER" 'JSON',
       "ROW_PATH" '$',
       "visitId_PATH" '$.visitId',
       "verdict_PATH" '$.verdict',
       "kafka.consumer.config" '/etc/risk/kafka.properties',
       "SEED_BROKERS" 'localhost:9092',
       "STARTING_TIME" 'LATEST',
       "MAX_POLL_RECORDS" '100',
       "STARTING_OFFSET" '-1',
       "BUFFER_SIZE" '1048576',
       "FETCH_SIZE" '1000000',
       "isolation.level" 'read_uncommitted',
       "TOPIC" 'contexts'
   );

CREATE OR REPLACE STREAM "contexts"
(
    "visitId" VARCHAR(64),
    "verdict" VARCHAR(102400)
);

CREATE OR REPLACE PUMP "source-to-contexts-Pump" STOPPED AS
INSERT INTO "contexts"
SELECT STREAM * FROM "contexts_raw_fs";


-- ---------------------------------------------------------------------------------------------------------------------
-- PIPELINE: scoring
-- ---------------------------------------------------------------------------------------------------------------------

--  Join contexts and signals on visitId
CREATE OR REPLACE VIEW "scoring_step_1" AS
    SELECT STREAM "signals".*, "contexts"."verdict"
    FROM "contexts" AS "contexts"
    INNER JOIN "signals" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS "signals"
        ON ("contexts"."visitId" = "signals"."visitId")  ;


--  Add the parameters used to compute features
CREATE OR REPLACE JAR risk_udx LIBRARY 'file:/opt/risk/risk-udx.jar' OPTIONS (0);
CREATE OR REPLACE FUNCTION "extractProperties"(c CURSOR) RETURNS TABLE(
    c.*,
    "client_app" VARCHAR(64),
    "event_kind" VARCHAR(64),
    "browser_name" VARCHAR(64),
    "os_name" VARCHAR(64),
    "network_ip" VARCHAR(64),
    "deviceId" VARCHAR(64),
    "day_of_week" VARCHAR(64),
    "hour_of_day" VARCHAR(64) ) LANGUAGE JAVA PARAMETER STYLE SYSTEM DEFINED JAVA NO SQL EXTERNAL NAME 'risk_udx:com.example.udx.RiskApi.addFeatureParams';

CREATE OR REPLACE VIEW "scoring_step_2" AS
    SELECT STREAM *
    FROM STREAM("extractProperties"(CURSOR( SELECT STREAM * FROM "scoring_step_1" AS "input")));


CREATE OR REPLACE PUMP "interface"."transactions_pump" STOPPED
AS
INSERT INTO "interface"."transactions"
( "transaction_id"
, "device_id"
, "user_id"
, "client_app"
, "event_kind"
, "browser_name"
, "os_name"
, "network_ip"
, "day_of_week"
, "hour_of_day"
, "visitId"
)
SELECT STREAM
  "visitId"
, "deviceId"
, "client_app"
, "client_app"
, "event_kind"
, "browser_name"
, "os_name"
, "network_ip"
, "day_of_week"
, "hour_of_day"
, "visitId"
FROM "scoring_step_2";
