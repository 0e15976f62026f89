-- source: github NigelThomas/fpp-dev:bps-files/fpp-pipeline.sql, commit 69cf5b2daa8aa911f285ba0fa8ea98feed2bfe88 (2020-05-05)
-- modeled on: one-file fraud-scoring pipeline, every name schema-qualified ("schema-with-dots"."name"): ALTER PUMP/DROP SCHEMA reset, KAFKA10_SERVER JSON source and sink foreign streams with native streams and pumps STOPPED, a stream-stream INNER JOIN ... OVER (RANGE INTERVAL '1' HOUR PRECEDING), a Java table UDX, chained COUNT / COUNT(DISTINCT) over named partitioned RANGE windows, a second UDX, a pump with column list and CASTs, a trailing output view
-- dialect: sqlstream
-- check: 11_qualified_kafka_range_join_windowed_features.sql:163:28: error: CREATE FUNCTION risk-score-1.4.extractProperties: user-defined functions are not supported (a Java UDX runs inside s-Server; streamjoin runs SQL's built-in functions)
-- fair rejection: the scoring runs through Java table UDXs (CREATE FUNCTION ... LANGUAGE JAVA over CURSOR(...)), outside streamjoin's scope; its KAFKA10_SERVER foreign streams would be refused as well
CREATE OR REPLACE SCHEMA "risk-score-1.4";
ALTER PUMP "risk-score-1.4".* STOP;
DROP SCHEMA "risk-score-1.4" CASCADE;
CREATE OR REPLACE SCHEMA "risk-score-1.4";

-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SOURCE: signals
-- ---------------------------------------------------------------------------------------------------------------------
CREATE OR REPLACE FOREIGN STREAM "risk-score-1.4"."signals_raw_fs"
(
    "tenantId" VARCHAR(256),
    "visitId" VARCHAR(64),
    "signals" VARCHAR(102400),
    "headers" VARCHAR(102400),
    "geo" VARCHAR(102400)
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
        "STARTING_TIME" 'LATEST',
        "MAX_POLL_RECORDS" '100',
        "STARTING_OFFSET" '-1',
        "BUFFER_SIZE" '1048576',
        "FETCH_SIZE" '1000000',
        "CLIENT_ID" 'risk-score-signals',
        "isolation.level" 'read_uncommitted',
        "TOPIC" 'signals'
    );

CREATE OR REPLACE STREAM "risk-score-1.4"."signals"
(
    "tenantId" VARCHAR(256),
    "visitId" VARCHAR(64),
    "signals" VARCHAR(102400),
    "headers" VARCHAR(102400),
    "geo" VARCHAR(102400)
);

CREATE OR REPLACE PUMP "risk-score-1.4"."source-to-signals-Pump" STOPPED AS
INSERT INTO "risk-score-1.4"."signals"
SELECT STREAM * FROM "risk-score-1.4"."signals_raw_fs";




-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SOURCE: contexts
-- ---------------------------------------------------------------------------------------------------------------------

CREATE OR REPLACE FOREIGN STREAM "risk-score-1.4"."contexts_raw_fs"
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
        "CLIENT_ID" 'risk-score-contexts',
        "isolation.level" 'read_uncommitted',
        "TOPIC" 'contexts'
    );

CREATE OR REPLACE STREAM "risk-score-1.4"."contexts"
(
    "visitId" VARCHAR(64),
    "verdict" VARCHAR(102400)
);

CREATE OR REPLACE PUMP "risk-score-1.4"."source-to-contexts-Pump" STOPPED AS
INSERT INTO "risk-score-1.4"."contexts"
SELECT STREAM * FROM "risk-score-1.4"."contexts_raw_fs";




-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SINK: scores
-- ---------------------------------------------------------------------------------------------------------------------

CREATE OR REPLACE FOREIGN STREAM "risk-score-1.4"."scores_fs"
(
    "tenantId" VARCHAR(256),
    "signals" VARCHAR(102400),
    "headers" VARCHAR(102400),
    "geo" VARCHAR(102400),
    "verdict" VARCHAR(102400),
    "score" VARCHAR(1024)
)
    SERVER "KAFKA10_SERVER"
    OPTIONS (
        "FORMATTER" 'JSON',
        "kafka.producer.config" '/etc/risk/kafka.properties',
        "TRANSACTION_ROWTIME_LIMIT" '1000',
        "pump.name" 'LOCALDB.risk-score-1.4.scores_fs_pump',
        "HA_ROLLOVER_TIMEOUT" '5000',
        "compression.codec" 'none',
        "message.send.max.retries" '3',
        "retry.backoff.ms" '100',
        "request.timeout.ms" '10000',
        "topic.metadata.refresh.interval.ms" '600000',
        "send.buffer.bytes" '102400',
        "client.id" 'sqlstream',
        "POLL_TIMEOUT" '100',
        "producer.type" 'async',
        "queue.buffering.max.ms" '5000',
        "queue.buffering.max.messages" '1000',
        "queue.enqueue.timeout.ms" '-1',
        "batch.num.messages" '200',
        "TOPIC" 'scores'
    );

CREATE OR REPLACE STREAM "risk-score-1.4"."scores"
(
    "tenantId" VARCHAR(256),
    "signals" VARCHAR(102400),
    "headers" VARCHAR(102400),
    "geo" VARCHAR(102400),
    "verdict" VARCHAR(102400),
    "score" VARCHAR(1024)
);

CREATE OR REPLACE PUMP "risk-score-1.4"."scores_fs_pump" STOPPED AS
INSERT INTO "risk-score-1.4"."scores_fs"
SELECT STREAM * FROM "risk-score-1.4"."scores";



-- ---------------------------------------------------------------------------------------------------------------------
-- PIPELINE: scoring
-- ---------------------------------------------------------------------------------------------------------------------

--  Join contexts and signals on visitId
CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_step_1" AS
    SELECT STREAM "signals".*, "contexts"."verdict"
    FROM "risk-score-1.4"."contexts" AS "contexts"
    INNER JOIN "risk-score-1.4"."signals" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS "signals"
        ON ("contexts"."visitId" = "signals"."visitId")  ;

--  Add the parameters used to compute features
CREATE OR REPLACE JAR "risk-score-1.4".risk_udx LIBRARY 'file:/opt/risk/risk-udx.jar' OPTIONS (0);
CREATE OR REPLACE FUNCTION "risk-score-1.4"."extractProperties"(c CURSOR) RETURNS TABLE( c.*, "userId" VARCHAR(64), "browserName" VARCHAR(64), "osName" VARCHAR(64), "networkIp" VARCHAR(64) ) LANGUAGE JAVA PARAMETER STYLE SYSTEM DEFINED JAVA NO SQL EXTERNAL NAME '"risk-score-1.4".risk_udx:com.example.udx.RiskApi.addFeatureParams';
CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_step_2" AS
    SELECT STREAM *
    FROM STREAM("risk-score-1.4"."extractProperties"(CURSOR( SELECT STREAM * FROM "risk-score-1.4"."scoring_step_1" AS "input")));


CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_feature_w12h_userid" AS
  SELECT STREAM *, COUNT("userId") OVER "window12h" AS "w12h_userId_count", COUNT(DISTINCT "browserName") OVER "window12h" AS "w12h_browserName_count", COUNT(DISTINCT "networkIp") OVER "window12h" AS "w12h_networkIp_count", COUNT(DISTINCT "osName") OVER "window12h" AS "w12h_osName_count"
  FROM "risk-score-1.4"."scoring_step_2" AS "input"
  WINDOW "window12h" AS (PARTITION by "userId" RANGE INTERVAL '12' HOUR PRECEDING);

CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_feature_w3h_userid" AS
  SELECT STREAM *, COUNT("userId") OVER "window3h" AS "w3h_userId_count", COUNT(DISTINCT "browserName") OVER "window3h" AS "w3h_browserName_count", COUNT(DISTINCT "networkIp") OVER "window3h" AS "w3h_networkIp_count", COUNT(DISTINCT "osName") OVER "window3h" AS "w3h_osName_count"
  FROM "risk-score-1.4"."scoring_feature_w12h_userid" AS "input"
  WINDOW "window3h" AS (PARTITION by "userId" RANGE INTERVAL '3' HOUR PRECEDING);

CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_feature_w1h_userid" AS
  SELECT STREAM *, COUNT("userId") OVER "window1h" AS "w1h_userId_count", COUNT(DISTINCT "browserName") OVER "window1h" AS "w1h_browserName_count", COUNT(DISTINCT "networkIp") OVER "window1h" AS "w1h_networkIp_count", COUNT(DISTINCT "osName") OVER "window1h" AS "w1h_osName_count"
  FROM "risk-score-1.4"."scoring_feature_w3h_userid" AS "input"
  WINDOW "window1h" AS (PARTITION by "userId" RANGE INTERVAL '1' HOUR PRECEDING);

-- Compute the score
CREATE OR REPLACE FUNCTION "risk-score-1.4"."addScore"(c CURSOR) RETURNS TABLE( c.*, "score" VARCHAR(1024) ) LANGUAGE JAVA PARAMETER STYLE SYSTEM DEFINED JAVA NO SQL EXTERNAL NAME '"risk-score-1.4".risk_udx:com.example.udx.RiskApi.addScore';
CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_step_30" AS
    SELECT STREAM  *
    FROM STREAM("risk-score-1.4"."addScore"(CURSOR( SELECT STREAM * FROM "risk-score-1.4"."scoring_feature_w1h_userid" AS "input")));



--  Define the pump
CREATE OR REPLACE PUMP "risk-score-1.4"."scoring_step_40-to-scores-Pump" STOPPED AS
INSERT INTO "risk-score-1.4"."scores"
    ("tenantId", "signals", "headers", "geo", "verdict", "score")
SELECT STREAM CAST("tenantId" AS VARCHAR(256)) AS "tenantId", CAST("signals" AS VARCHAR(102400)) AS "signals", CAST("headers" AS VARCHAR(102400)) AS "headers", CAST("geo" AS VARCHAR(102400)) AS "geo", CAST("verdict" AS VARCHAR(102400)) AS "verdict", CAST("score" AS VARCHAR(1024)) AS "score"
    FROM "risk-score-1.4"."scoring_step_30" AS "input";
CREATE OR REPLACE VIEW "risk-score-1.4"."scoring_out" AS SELECT STREAM * FROM "risk-score-1.4"."scoring_step_30";
