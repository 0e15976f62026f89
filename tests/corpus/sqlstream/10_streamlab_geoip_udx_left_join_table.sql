-- source: github NigelThomas/sqlstream-orctest:CSVingest.slab (StreamLab project, projectModel.mainScript), commit 5194f016f28b7fe37e3b5139351505d6839b53e8 (2020-01-02)
-- modeled on: StreamLab ingest of session records: FILE_SERVER CSV foreign stream and two foreign tables wrapped in views, hyphenated quoted column names, !step markers, CHAR_TO_TIMESTAMP conversions, extract(hour from "input".rowtime), CREATE JAR + Java GeoIP table UDX over CURSOR(...), a stream LEFT JOIN to a table view ("input"/"rhs"), a pump STOPPED with an explicit ("ROWTIME", ...) column list and CASTs into a stream of another schema
-- dialect: sqlstream
-- check: 10_streamlab_geoip_udx_left_join_table.sql:149:28: error: CREATE FUNCTION StreamLab_Output_Ingest.pipeline_1_step_6_addIpLocation: user-defined functions are not supported (a Java UDX runs inside s-Server; streamjoin runs SQL's built-in functions)
-- fair rejection: its location columns come from a Java GeoIP table UDX (CREATE JAR + CREATE FUNCTION ... EXTERNAL NAME); streamjoin runs no Java code
-- declared elsewhere in the original (the "interface" schema script; a native stream that this script's pump fills):
CREATE STREAM "interface"."clean_sessions" ("countryCode" CHAR(2), "city" VARCHAR(32), "latitude" DOUBLE, "longitude" DOUBLE, "rowtime_hour" BIGINT, "rec-end-time" TIMESTAMP, "rec-start-time" TIMESTAMP, "handset imei" VARCHAR(32), "tac" VARCHAR(32), "server-ip" VARCHAR(16), "rec-duration" INTEGER, "rec-id" VARCHAR(32), "rec-start" TIMESTAMP, "rec-end" TIMESTAMP, "bytes-down" INTEGER, "bytes-up" INTEGER, "marketing_name" VARCHAR(256), "maker" VARCHAR(64), "Bands" VARCHAR(128), "model_name" VARCHAR(256), "os_name" VARCHAR(16));

DROP SCHEMA "StreamLab_Output_Ingest" CASCADE;
CREATE OR REPLACE SCHEMA "StreamLab_Output_Ingest";
-- StreamApp start

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN STREAM "StreamLab_Output_Ingest"."sessions_fs"
(
    "rec-end-time" VARCHAR(32),
    "rec-start-time" VARCHAR(32),
    "handset imei" VARCHAR(32),
    "handset imsi" BIGINT,
    "server-ip" VARCHAR(16),
    "subscriber-ip" VARCHAR(64),
    "rec-duration" INTEGER,
    "rec-end" VARCHAR(32),
    "rec-id" VARCHAR(32),
    "rec-start" VARCHAR(32),
    "bytes-down" INTEGER,
    "bytes-up" INTEGER,
    "event-label" VARCHAR(16)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "QUOTE_CHARACTER" '"',
        "SEPARATOR" ',',
        "SKIP_HEADER" 'true',

        "DIRECTORY" '/srv/ingest/in',
        "FILENAME_PATTERN" '.*SESSIONS.*'

);
CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."sessions" AS
SELECT STREAM * FROM "StreamLab_Output_Ingest"."sessions_fs";

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_Ingest"."ref_tac_table"
(
    "TAC" VARCHAR(16),
    "marketing_name" VARCHAR(256),
    "maker" VARCHAR(64),
    "Bands" VARCHAR(128),
    "model_name" VARCHAR(256),
    "os_name" VARCHAR(16),
    "device_type" VARCHAR(8)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" '|',
        "SKIP_HEADER" 'false',

        "DIRECTORY" '/srv/ingest/ref',
        "FILENAME_PATTERN" 'tac-list.csv'

);
CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."ref_tac" AS
SELECT  * FROM "StreamLab_Output_Ingest"."ref_tac_table";

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_Ingest"."ref_sites_table"
(
    "MCC" INTEGER,
    "MNC" INTEGER,
    "LAC" VARCHAR(4),
    "CI" VARCHAR(8),
    "LAT" REAL,
    "LONG" REAL,
    "TOWN" VARCHAR(32)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" ',',
        "SKIP_HEADER" 'true',

        "DIRECTORY" '/srv/ingest/ref',
        "FILENAME_PATTERN" 'sites.csv'

);
CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."ref_sites" AS
SELECT  * FROM "StreamLab_Output_Ingest"."ref_sites_table";

-- sink for an existing stream

!step=e4001,text=pipeline_1 1: Convert rec-end using the format expression dd/MM/yyyy' 'HH:mm:ss. Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_1" AS
    SELECT STREAM "rec-end-time","rec-start-time","handset imei","handset imsi","server-ip","subscriber-ip","rec-duration",CHAR_TO_TIMESTAMP('dd/MM/yyyy'' ''HH:mm:ss', CAST("rec-end" AS VARCHAR(64))) AS "rec-end","rec-id","rec-start","bytes-down","bytes-up","event-label"
    FROM "StreamLab_Output_Ingest"."sessions" AS "input";

!step=e4002,text=pipeline_1 2: Convert rec-end-time using the format expression dd/MM/yyyy' 'HH:mm:ss:SSS. Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_2" AS
    SELECT STREAM CHAR_TO_TIMESTAMP('dd/MM/yyyy'' ''HH:mm:ss:SSS', CAST("rec-end-time" AS VARCHAR(64))) AS "rec-end-time","rec-start-time","handset imei","handset imsi","server-ip","subscriber-ip","rec-duration","rec-end","rec-id","rec-start","bytes-down","bytes-up","event-label"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_1" AS "input";

!step=e4003,text=pipeline_1 3: Convert rec-start-time using the format expression dd/MM/yyyy HH:mm:ss:SSS. Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_3" AS
    SELECT STREAM "rec-end-time",CHAR_TO_TIMESTAMP('dd/MM/yyyy HH:mm:ss:SSS', CAST("rec-start-time" AS VARCHAR(64))) AS "rec-start-time","handset imei","handset imsi","server-ip","subscriber-ip","rec-duration","rec-end","rec-id","rec-start","bytes-down","bytes-up","event-label"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_2" AS "input";

!step=e4004,text=pipeline_1 4: Convert rec-start using the format expression dd/MM/yyyy HH:mm:ss. Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_4" AS
    SELECT STREAM "rec-end-time","rec-start-time","handset imei","handset imsi","server-ip","subscriber-ip","rec-duration","rec-end","rec-id",CHAR_TO_TIMESTAMP('dd/MM/yyyy HH:mm:ss', CAST("rec-start" AS VARCHAR(64))) AS "rec-start","bytes-down","bytes-up","event-label"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_3" AS "input";

!step=e4005,text=pipeline_1 5: Create a new column named rowtime_hour containing extract(hour from "input".rowtime)
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_5" AS
    SELECT STREAM
           extract(hour from "input".rowtime) AS "rowtime_hour", *
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_4" AS "input";

!step=e4006,text=pipeline_1 6: Geo-locate the IP addresses in server-ip (prefix is )
-- Add lat/lon columns given a column of IP addresses

CREATE OR REPLACE JAR "StreamLab_Output_Ingest"."GeoIp"
    LIBRARY 'file:plugin/geoip/geoip.jar'
    OPTIONS(0);

CREATE OR REPLACE FUNCTION "StreamLab_Output_Ingest"."pipeline_1_step_6_addIpLocation"(
        c CURSOR,
        ipColName VARCHAR(25))
    RETURNS TABLE(
        c.*,
        "countryCode" CHAR(2),
        "city" VARCHAR(32),
        "latitude" float,
        "longitude" float)
    LANGUAGE JAVA
    PARAMETER STYLE SYSTEM DEFINED JAVA
    NO SQL
    EXTERNAL NAME '"StreamLab_Output_Ingest"."GeoIp":com.sqlstream.plugin.geoip.GeoIp.addLocation';

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_6" AS
    SELECT STREAM "input"."countryCode" AS "countryCode", "input"."city" AS "city", "input"."latitude" AS "latitude", "input"."longitude" AS "longitude", "rowtime_hour", "rec-end-time", "rec-start-time", "handset imei", "handset imsi", "server-ip", "subscriber-ip", "rec-duration", "rec-end", "rec-id", "rec-start", "bytes-down", "bytes-up", "event-label"
    FROM STREAM ("StreamLab_Output_Ingest"."pipeline_1_step_6_addIpLocation"(
        CURSOR(SELECT STREAM * FROM "StreamLab_Output_Ingest"."pipeline_1_step_5" AS "input"),
        'server-ip'
    )) AS "input";

!step=e4007,text=pipeline_1 7: Extract text from handset imei into tac, starting at 1 for 8 characters.
-- Extract Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_7" AS
    SELECT STREAM "countryCode","city","latitude","longitude","rowtime_hour","rec-end-time","rec-start-time","handset imei",SUBSTRING("handset imei",1,8) AS "tac","handset imsi","server-ip","subscriber-ip","rec-duration","rec-end","rec-id","rec-start","bytes-down","bytes-up","event-label"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_6" AS "input";

!step=e4008,text=pipeline_1 8: Perform a join of type: (left window none) left join to table StreamLab_Output_Ingest.ref_tac (right window none) Join conditions: Join tac with TAC. 
-- Join Operation

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_step_8" AS
    SELECT STREAM "input".*, "rhs"."marketing_name", "rhs"."maker", "rhs"."Bands", "rhs"."model_name", "rhs"."os_name", "rhs"."device_type"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_7"   AS "input"
    LEFT JOIN "StreamLab_Output_Ingest"."ref_tac"  AS "rhs"
        ON ("input"."tac" = "rhs"."TAC")  ;

!step=e4009,text=pipeline_1 9: Route to stream interface.clean_sessions

-- sink for an existing stream

-- Define the pump

CREATE OR REPLACE PUMP "StreamLab_Output_Ingest"."pipeline_1_step_9-to-clean_sessions-Pump" STOPPED AS
INSERT INTO "interface"."clean_sessions" 
    ("ROWTIME", "countryCode", "city", "latitude", "longitude", "rowtime_hour", "rec-end-time", "rec-start-time", "handset imei", "tac", "server-ip", "rec-duration", "rec-id", "rec-start", "rec-end", "bytes-down", "bytes-up", "marketing_name", "maker", "Bands", "model_name", "os_name")
SELECT STREAM "ROWTIME", CAST("countryCode" AS CHAR(2)) AS "countryCode", CAST("city" AS VARCHAR(32)) AS "city", CAST("latitude" AS DOUBLE) AS "latitude", CAST("longitude" AS DOUBLE) AS "longitude", CAST("rowtime_hour" AS BIGINT) AS "rowtime_hour", CAST("rec-end-time" AS TIMESTAMP) AS "rec-end-time", CAST("rec-start-time" AS TIMESTAMP) AS "rec-start-time", CAST("handset imei" AS VARCHAR(32)) AS "handset imei", CAST("tac" AS VARCHAR(32)) AS "tac", CAST("server-ip" AS VARCHAR(16)) AS "server-ip", CAST("rec-duration" AS INTEGER) AS "rec-duration", CAST("rec-id" AS VARCHAR(32)) AS "rec-id", CAST("rec-start" AS TIMESTAMP) AS "rec-start", CAST("rec-end" AS TIMESTAMP) AS "rec-end", CAST("bytes-down" AS INTEGER) AS "bytes-down", CAST("bytes-up" AS INTEGER) AS "bytes-up", CAST("marketing_name" AS VARCHAR(256)) AS "marketing_name", CAST("maker" AS VARCHAR(64)) AS "maker", CAST("Bands" AS VARCHAR(128)) AS "Bands", CAST("model_name" AS VARCHAR(256)) AS "model_name", CAST("os_name" AS VARCHAR(16)) AS "os_name"
    FROM "StreamLab_Output_Ingest"."pipeline_1_step_8" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_Ingest"."pipeline_1_out" AS SELECT STREAM * FROM "StreamLab_Output_Ingest"."pipeline_1_step_8";

-- StreamApp end
