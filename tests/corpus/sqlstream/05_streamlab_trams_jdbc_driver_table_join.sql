-- source: github NigelThomas/azure_event_hub:buses_azure_event_hub.slab (StreamLab buses demo, projectModel.mainScript), commit 65e877e17b9e73471d5eb80d9f027f996d41ff01 (2020-03-27)
-- modeled on: StreamLab version of the s-Server buses demo on Kafka (Azure Event Hub): CREATE SERVER ... FOREIGN DATA WRAPPER "SYS_JDBC", JDBC foreign tables (lookup and MERGE sink), KAFKA10_SERVER foreign streams (XML parser, CSV lines, JSON formatter sink), native streams fed by pumps STOPPED, !step markers, ROWTIME promotion by alias, a Java parser UDX over CURSOR(...) with ROW(...) and a VALUES options cursor, a stream INNER JOIN to the drivers table, RANGE-window Bollinger bands, MERGE INTO ... USING pump
-- dialect: sqlstream
-- check: 05_streamlab_trams_jdbc_driver_table_join.sql:360:1: error: a pump that MERGEs INTO a table (an upsert into a JDBC table) is not supported: a pump INSERTs INTO a stream or a sink
-- fair rejection: its parsing step is a Java UDX (CREATE FUNCTION ... LANGUAGE JAVA EXTERNAL NAME) over CURSOR(...), and its sink is a MERGE INTO a JDBC table (an upsert), neither of which streamjoin runs
DROP SCHEMA "StreamLab_Output_trams" CASCADE;
CREATE OR REPLACE SCHEMA "StreamLab_Output_trams";
-- StreamApp start

-- PostgreSQL server

CREATE OR REPLACE SERVER "PostgreSQL_DB_1_trams_hub"
    FOREIGN DATA WRAPPER "SYS_JDBC"
    OPTIONS (
        "URL" 'jdbc:postgresql://localhost/fleet',
        "USER_NAME" 'fleet',
        "PASSWORD" 'fleetpass',
        "SCHEMA_NAME" 'public',
        "DIALECT" 'PostgreSQL',
        "JNDI_WRITEBACK" 'true',
        "pollingInterval" '1000',
        "txInterval" '1000',

        "DRIVER_CLASS" 'org.postgresql.Driver'
    );

-- External table

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_trams"."operators" ("id" INTEGER,
    "name" VARCHAR(128))
SERVER "PostgreSQL_DB_1_trams_hub"
OPTIONS (
    "SCHEMA_NAME" 'public',

    "TABLE_NAME" 'operators'
);

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN STREAM "StreamLab_Output_trams"."trams_fs"
(
    "id" BIGINT,
    "reported_at" VARCHAR(32),
    "speed" INTEGER,
    "operator_no" BIGINT,
    "scheduled" BOOLEAN,
    "gps" VARCHAR(128),
    "line" VARCHAR(8)
)

    SERVER "KAFKA10_SERVER"

OPTIONS (
"PARSER" 'XML',
        "CHARACTER_ENCODING" 'UTF-8',
        "PARSER_XML_ROW_TAGS" '/Row1',
        "PARSER_XML_USE_ATTRIBUTES" 'false',
"id_XPATH" '/Row1/id',
        "reported_at_XPATH" '/Row1/reported_at',
        "speed_XPATH" '/Row1/speed',
        "operator_no_XPATH" '/Row1/operator_no',
        "scheduled_XPATH" '/Row1/scheduled',
        "gps_XPATH" '/Row1/gps',
        "line_XPATH" '/Row1/line',
        "kafka.consumer.config" '/etc/fleet/kafka.consumer.config',

        "SEED_BROKERS" 'hub.example.net:9093',
        
    
        "STARTING_TIME" 'LATEST',

        "MAX_POLL_RECORDS" '100',
        "STARTING_OFFSET" '-1',
        
        "BUFFER_SIZE" '1048576',
        "FETCH_SIZE" '1000000',
        
        
        "isolation.level" 'read_uncommitted',
        "TOPIC" 'positions'

);

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."trams_ns"
(
    "id" BIGINT,
    "reported_at" VARCHAR(32),
    "speed" INTEGER,
    "operator_no" BIGINT,
    "scheduled" BOOLEAN,
    "gps" VARCHAR(128),
    "line" VARCHAR(8)
);

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."source-to-trams-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."trams_ns" 
SELECT STREAM * 

FROM "StreamLab_Output_trams"."trams_fs";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."trams" AS
SELECT STREAM * FROM "StreamLab_Output_trams"."trams_ns";

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN STREAM "StreamLab_Output_trams"."trams_echo_fs"
("line" VARCHAR(4096))

    SERVER "KAFKA10_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" '',
        "SKIP_HEADER" 'false',

        "kafka.consumer.config" '/etc/fleet/kafka.consumer.config',

        "SEED_BROKERS" 'hub.example.net:9093',
        
    
        "STARTING_TIME" 'EARLIEST',

        "MAX_POLL_RECORDS" '100',
        "STARTING_OFFSET" '-1',
        
        "BUFFER_SIZE" '1048576',
        "FETCH_SIZE" '1000000',
        
        
        "isolation.level" 'read_uncommitted',
        "TOPIC" 'trams'

);

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."trams_echo_ns"
("line" VARCHAR(4096));

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."source-to-trams_echo-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."trams_echo_ns" 
SELECT STREAM * 

FROM "StreamLab_Output_trams"."trams_echo_fs";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."trams_echo" AS
SELECT STREAM * FROM "StreamLab_Output_trams"."trams_echo_ns";

-- External table

CREATE OR REPLACE SCHEMA "StreamLab_Output_trams";

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_trams"."fast_trams" ("position_time" TIMESTAMP,
    "tram" VARCHAR(128),
    "operator_no" INTEGER,
    "speed" DOUBLE)
SERVER "PostgreSQL_DB_1_trams_hub"
OPTIONS (
    "SCHEMA_NAME" 'public',
    "TABLE_NAME" 'fast_trams',

    "TRANSACTION_ROW_LIMIT" '0',
    "TRANSACTION_ROWTIME_LIMIT" '1000'
);

-- create a new stream as a sink

CREATE OR REPLACE SCHEMA "StreamLab_Output_trams";

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."hub"(
    "speed_cat" VARCHAR(6),
    "id" BIGINT,
    "reported_at" TIMESTAMP,
    "speed" INTEGER,
    "operator_no" BIGINT,
    "scheduled" BOOLEAN,
    "gps_heading" INTEGER,
    "gps_lon" DOUBLE,
    "gps_lat" DOUBLE,
    "line" VARCHAR(8),
    "name" VARCHAR(128)
);

-- ECDA writing adapter/agent (multi-format)

CREATE OR REPLACE SCHEMA "StreamLab_Output_trams";

CREATE OR REPLACE FOREIGN STREAM "StreamLab_Output_trams"."EchoToHub_out_sink_1_fs"
(
    "speed_cat" VARCHAR(6),
    "id" BIGINT,
    "reported_at" TIMESTAMP,
    "speed" INTEGER,
    "operator_no" BIGINT,
    "scheduled" BOOLEAN,
    "gps_heading" INTEGER,
    "gps_lon" DOUBLE,
    "gps_lat" DOUBLE,
    "line" VARCHAR(8),
    "name" VARCHAR(128)
)

    SERVER "KAFKA10_SERVER"

OPTIONS (
    "FORMATTER" 'JSON',
            "kafka.producer.config" '/etc/fleet/kafka.consumer.config',

        "TRANSACTION_ROWTIME_LIMIT" '1000',
        
        
        "pump.name" 'LOCALDB.StreamLab_Output_trams.EchoToHub_out_sink_1_fs_pump',
        "HA_ROLLOVER_TIMEOUT" '5000',
        "bootstrap.servers" 'hub.example.net:9093',
        "compression.type" 'none',
         "batch.size" '16384',
        "linger.ms" '100',

        
        "retry.backoff.ms" '100',
        "request.timeout.ms" '10000',
        "send.buffer.bytes" '102400',
        
        "POLL_TIMEOUT" '100',
        
        "TOPIC" 'trams'

    );

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."EchoToHub_out_sink_1"
(
    "speed_cat" VARCHAR(6),
    "id" BIGINT,
    "reported_at" TIMESTAMP,
    "speed" INTEGER,
    "operator_no" BIGINT,
    "scheduled" BOOLEAN,
    "gps_heading" INTEGER,
    "gps_lon" DOUBLE,
    "gps_lat" DOUBLE,
    "line" VARCHAR(8),
    "name" VARCHAR(128)
);

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."EchoToHub_out_sink_1_fs_pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."EchoToHub_out_sink_1_fs" 
SELECT STREAM * FROM "StreamLab_Output_trams"."EchoToHub_out_sink_1";

!step=e3001,text=transform 1: Accept rows where speed is greater than 0
-- Filter Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_1" AS
    SELECT STREAM *
    FROM "StreamLab_Output_trams"."trams" AS "input"
    WHERE "speed" > 0;

!step=e3002,text=transform 2: Convert reported_at using the format expression yyyy-MM-dd'T'HH:mm:ss.SSS. Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_2" AS
    SELECT STREAM "id",CAST("reported_at" AS TIMESTAMP) /* 'yyyy-MM-dd''T''HH:mm:ss.SSS' */ AS "reported_at","speed","operator_no","scheduled","gps","line"
    FROM "StreamLab_Output_trams"."transform_step_1" AS "input";

!step=e3003,text=transform 3: Duplicate the columns reported_at,speed, adding the suffix _cat to the new column names
-- Duplicate Columns Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_3" AS
    SELECT STREAM "reported_at" AS "reported_at_cat", "speed" AS "speed_cat", *
    FROM "StreamLab_Output_trams"."transform_step_2" AS "input";

!step=e3004,text=transform 4: Rename column reported_at_cat to ROWTIME

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_4" AS
    SELECT STREAM "reported_at_cat" AS "ROWTIME","speed_cat","id","reported_at","speed","operator_no","scheduled","gps","line"
    FROM "StreamLab_Output_trams"."transform_step_3" AS "input";

!step=e3005,text=transform 5: Categorize speed_cat: slow below 10, medium below 30, else fast
-- Categorize Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_5" AS
    SELECT STREAM TRIM(CASE WHEN "speed_cat" < 10 THEN 'slow' WHEN "speed_cat" < 30 THEN 'medium' ELSE 'fast' END) AS "speed_cat","id","reported_at","speed","operator_no","scheduled","gps","line"
    FROM "StreamLab_Output_trams"."transform_step_4" AS "input";

!step=e3006,text=transform 6: Parse the JSON in gps extracting heading INTEGER lon DOUBLE lat DOUBLE with the prefix: gps
-- Parse JSON Operation

CREATE OR REPLACE FUNCTION "StreamLab_Output_trams"."transform_step_6_parser"(
   input cursor,
   columnName select from input, 
   parserClassName varchar(256),
   options cursor
)
returns table(
    input.*,
    "heading" INTEGER,"lon" DOUBLE,"lat" DOUBLE
)
language java
parameter style system defined java
no sql
external name 'class com.sqlstream.aspen.namespace.common.ParserUdx.parseColumn';

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_6" AS
    SELECT STREAM "speed_cat","id","reported_at","speed","operator_no","scheduled",JSON."heading" AS "gps_heading", JSON."lon" AS "gps_lon", JSON."lat" AS "gps_lat","line"
    FROM STREAM ("StreamLab_Output_trams"."transform_step_6_parser"(
       CURSOR(SELECT STREAM * FROM "StreamLab_Output_trams"."transform_step_5" AS "input"),
       ROW("gps"), 'JSON',
       CURSOR(SELECT * FROM (values '$') AS OPTIONS(ROW_PATH))
    )) JSON;

!step=e3007,text=transform 7: Perform a join of type: (left window none) inner join to table StreamLab_Output_trams.operators (right window none) Join conditions: Join operator_no with id. 
-- Join Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_step_7" AS
    SELECT STREAM "input".*, "rhs"."name"
    FROM "StreamLab_Output_trams"."transform_step_6"   AS "input"
    INNER JOIN "StreamLab_Output_trams"."operators"  AS "rhs"
        ON ("input"."operator_no" = "rhs"."id")  ;

!step=e3008,text=transform 8: Route to stream "StreamLab_Output_trams"."hub"

-- Define the pump

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."transform_step_8-to-hub-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."hub" 
SELECT STREAM *
    FROM "StreamLab_Output_trams"."transform_step_7" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."transform_out" AS SELECT STREAM * FROM "StreamLab_Output_trams"."transform_step_7";

!step=e3009,text=fast 1: Add an AVERAGE of speed over a 2 minute sliding window with bands k=1.0 and k=2.0.
-- Running Average Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."fast_step_1" AS
    SELECT STREAM (AVG(CAST("speed" AS DOUBLE)) OVER "aWindow") AS "avg",(AVG(CAST("speed" AS DOUBLE)) OVER "aWindow") + (STDDEV_POP(CAST("speed" AS DOUBLE)) OVER "aWindow") * 1.0 AS "avgB1_0u",(AVG(CAST("speed" AS DOUBLE)) OVER "aWindow") - (STDDEV_POP(CAST("speed" AS DOUBLE)) OVER "aWindow") * 1.0 AS "avgB1_0l",(AVG(CAST("speed" AS DOUBLE)) OVER "aWindow") + (STDDEV_POP(CAST("speed" AS DOUBLE)) OVER "aWindow") * 2.0 AS "avgB2_0u",(AVG(CAST("speed" AS DOUBLE)) OVER "aWindow") - (STDDEV_POP(CAST("speed" AS DOUBLE)) OVER "aWindow") * 2.0 AS "avgB2_0l",*
    FROM "StreamLab_Output_trams"."hub" AS "input"
    WINDOW "aWindow" AS (RANGE INTERVAL '2' MINUTE PRECEDING);

!step=e3010,text=fast 2: Bollinger Bands dashboard around avg
-- Bollinger Band Dashboard

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."dashboard_fast_step_2"(
"avg" DOUBLE, "avgB1_0u" DOUBLE, "avgB1_0l" DOUBLE, "avgB2_0u" DOUBLE, "avgB2_0l" DOUBLE, "speed_cat" VARCHAR(6), "id" BIGINT, "reported_at" TIMESTAMP, "speed" INTEGER, "operator_no" BIGINT, "scheduled" BOOLEAN, "gps_heading" INTEGER, "gps_lon" DOUBLE, "gps_lat" DOUBLE, "line" VARCHAR(8), "name" VARCHAR(128));

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."dashboard_fast_step_2-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."dashboard_fast_step_2" 
SELECT STREAM * FROM "StreamLab_Output_trams"."fast_step_1" AS "input";

!step=e3011,text=fast 3: Accept rows where speed is greater than ("avgB1_0u")
-- Filter Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."fast_step_3" AS
    SELECT STREAM *
    FROM "StreamLab_Output_trams"."dashboard_fast_step_2" AS "input"
    WHERE "speed" > ("avgB1_0u");

!step=e3012,text=fast 4: Route to table StreamLab_Output_trams.fast_trams

-- Define the pump

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."fast_step_4-to-fast_trams-Pump" STOPPED AS
MERGE INTO "StreamLab_Output_trams"."fast_trams"  AS "sink"
    USING (SELECT STREAM "ROWTIME", CAST("id" AS VARCHAR(128)) AS "id", CAST("operator_no" AS INTEGER) AS "operator_no", CAST("speed" AS DOUBLE) AS "speed" FROM "StreamLab_Output_trams"."fast_step_3") AS "input"
    ON ("sink"."position_time" = "input"."ROWTIME") AND ("sink"."tram" = "input"."id")
WHEN MATCHED THEN
    UPDATE SET "operator_no" = "input"."operator_no", "speed" = "input"."speed"
WHEN NOT MATCHED THEN
    INSERT ("position_time", "tram", "operator_no", "speed")
    VALUES ("ROWTIME", "id", "operator_no", "speed");

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."fast_out" AS SELECT STREAM * FROM "StreamLab_Output_trams"."fast_step_3";

!step=e3013,text=map 1: Create a new column named pixels containing CAST(CEILING("speed"/10) AS INT)
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."map_step_1" AS
    SELECT STREAM
           CAST(CEILING("speed"/10) AS INT) AS "pixels", *
    FROM "StreamLab_Output_trams"."hub" AS "input";

!step=e3014,text=map 2: Pan & zoom map of events at gps_lat / gps_lon, colored by speed_cat, sized by pixels, trails by id.
-- Map and Table Dashboard

CREATE OR REPLACE STREAM "StreamLab_Output_trams"."dashboard_map_step_2"(
"pixels" INTEGER, "speed_cat" VARCHAR(6), "id" BIGINT, "reported_at" TIMESTAMP, "speed" INTEGER, "operator_no" BIGINT, "scheduled" BOOLEAN, "gps_heading" INTEGER, "gps_lon" DOUBLE, "gps_lat" DOUBLE, "line" VARCHAR(8), "name" VARCHAR(128));

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."dashboard_map_step_2-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."dashboard_map_step_2" 
SELECT STREAM * FROM "StreamLab_Output_trams"."map_step_1" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."map_out" AS SELECT STREAM * FROM "StreamLab_Output_trams"."dashboard_map_step_2";

!step=e3015,text=EchoToHub 1: Route to Kafka at hub.example.net:9093 as JSON

-- Define the pump

CREATE OR REPLACE PUMP "StreamLab_Output_trams"."EchoToHub_step_1-to-EchoToHub_out_sink_1-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_trams"."EchoToHub_out_sink_1" 
SELECT STREAM *
    FROM "StreamLab_Output_trams"."hub" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."EchoToHub_out" AS SELECT STREAM * FROM "StreamLab_Output_trams"."hub";

CREATE OR REPLACE VIEW "StreamLab_Output_trams"."verification_out" AS SELECT STREAM * FROM "StreamLab_Output_trams"."trams_echo";

-- StreamApp end
