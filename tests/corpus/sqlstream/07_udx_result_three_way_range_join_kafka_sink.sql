-- source: github NigelThomas/fpp-dev:bps-files/fpp-score.sql, commit 69cf5b2daa8aa911f285ba0fa8ea98feed2bfe88 (2020-05-05)
-- modeled on: fraud-scoring sink: SET SCHEMA/SET PATH only (schema made by another script), a Java table UDX applied with FROM STREAM("f"(CURSOR(SELECT STREAM ...))) AS "result", then three chained INNER JOINs of that result to streams of two other schemas, each OVER (RANGE INTERVAL '1' HOUR PRECEDING), a KAFKA10_SERVER JSON foreign sink stream and a pump STOPPED into it
-- dialect: sqlstream
-- check: 07_udx_result_three_way_range_join_kafka_sink.sql:20:28: error: CREATE FUNCTION addScore: user-defined functions are not supported (a Java UDX runs inside s-Server; streamjoin runs SQL's built-in functions)
-- fair rejection: the program's first statement is a Java table UDX (CREATE FUNCTION ... (c CURSOR) RETURNS TABLE(c.*, ...) LANGUAGE JAVA) and its joins read that UDX's output; Java UDXs are outside streamjoin's scope
-- declared elsewhere in the original (interface.sql and the preparation script):
CREATE STREAM "interface"."fe_pipeline_out" ("transaction_id" VARCHAR(64), "user_id" VARCHAR(64), "device_id" VARCHAR(64), "features_vec" VARCHAR(32000)) WITH (connector = 'files', format = 'json', path = '/data/fe_pipeline_out');
CREATE STREAM "interface"."transactions" ("transaction_id" VARCHAR(64), "device_id" VARCHAR(64), "user_id" VARCHAR(64), "client_app" VARCHAR(64), "event_kind" VARCHAR(64), "day_of_week" VARCHAR(64), "hour_of_day" VARCHAR(64), "visitId" VARCHAR(64)) WITH (connector = 'files', format = 'json', path = '/data/transactions');
CREATE STREAM "risk-prep-0.2_v3"."signals" ("tenantId" VARCHAR(256), "visitId" VARCHAR(64), "signals" VARCHAR(1024000), "headers" VARCHAR(1024000), "geo" VARCHAR(1024000)) WITH (connector = 'files', format = 'json', path = '/data/signals');
CREATE STREAM "risk-prep-0.2_v3"."contexts" ("visitId" VARCHAR(64), "verdict" VARCHAR(102400)) WITH (connector = 'files', format = 'json', path = '/data/contexts');

-- ---------------------------------------------------------------------------------------------------------------------
-- EXTERNAL STREAM SINK: scores
-- ---------------------------------------------------------------------------------------------------------------------

SET SCHEMA '"risk-prep-0.2_v3"';
SET PATH '"risk-prep-0.2_v3"';

-- Compute the score
CREATE OR REPLACE FUNCTION "addScore" (c CURSOR)
    RETURNS TABLE( c.*, "score" VARCHAR(1024) )
    LANGUAGE JAVA PARAMETER STYLE SYSTEM DEFINED JAVA NO SQL EXTERNAL NAME 'risk_udx:com.example.udx.RiskApi.addScore';

CREATE OR REPLACE VIEW "scores" AS
    SELECT STREAM
        CAST("result"."transaction_id" AS VARCHAR(256)) AS "transaction_id",
        CAST("result"."user_id" AS VARCHAR(256)) AS "user_id",
        CAST("result"."device_id" AS VARCHAR(256)) AS "device_id",
        CAST("result"."features_vec" AS VARCHAR(32000)) AS "features_vec",
        CAST("result"."score" AS VARCHAR(1024)) AS "score",
        "transactions".*,
        "signals"."signals", "signals"."headers", "signals"."geo",
        "contexts"."verdict"
    FROM STREAM( "addScore"(CURSOR( SELECT STREAM * FROM "interface"."fe_pipeline_out"))) as "result"
    INNER JOIN "interface"."transactions" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS "transactions"
        ON ("transactions"."visitId" = "result"."transaction_id")
    INNER JOIN "risk-prep-0.2_v3"."signals" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS "signals"
        ON ("signals"."visitId" = "result"."transaction_id")
    INNER JOIN "risk-prep-0.2_v3"."contexts" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS "contexts"
        ON ("contexts"."visitId" = "result"."transaction_id");


-- Define a Kafka output stream to topic "scores"
CREATE OR REPLACE FOREIGN STREAM "scores_fs"
    (
        "transaction_id" VARCHAR(256)
        ,"user_id" VARCHAR(256)
        ,"device_id" VARCHAR(256)
        ,"features_vec" VARCHAR(32000)
        ,"score" VARCHAR(1024)
        ,"signals" VARCHAR(1024000)
        ,"headers" VARCHAR(1024000)
        ,"geo" VARCHAR(1024000)
        ,"verdict" VARCHAR(1024000)
        , "client_app" varchar(64)
        , "event_kind" varchar(64)
        , "day_of_week" varchar(64)
        , "hour_of_day" varchar(64)
        , "visitId" varchar(64)
    )

    SERVER "KAFKA10_SERVER" OPTIONS (
        "FORMATTER" 'JSON',
        "FORMATTER_INCLUDE_ROWTIME" 'false',
        "TOPIC" 'scores',
        "kafka.producer.config" '/etc/risk/kafka.properties'
    );

-- pump scores -> scores_fs
CREATE OR REPLACE PUMP "scores-to-scores_fs-Pump" STOPPED AS INSERT INTO "scores_fs" SELECT STREAM
"transaction_id"
        ,"user_id"
        ,"device_id"
        ,"features_vec"
        ,"score"
        ,"signals"
        ,"headers"
        ,"geo"
        ,"verdict"
        , "client_app"
        , "event_kind"
        , "day_of_week"
        , "hour_of_day"
        , "visitId"
    FROM "scores";
