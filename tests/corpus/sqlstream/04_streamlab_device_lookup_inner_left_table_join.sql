-- source: github NigelThomas/edr-analytics:edr.slab (StreamLab project, projectModel.mainScript), commit dfe2dadc43846e63b09130c4d7fe771dbe19aee3 (2020-03-06)
-- modeled on: StreamLab-generated EDR app: FILE_SERVER foreign stream + foreign tables wrapped in views, native sink streams, !step markers, stream INNER JOIN and LEFT JOIN to table views ("input"/"rhs" aliases), NTH_VALUE ... FROM LAST RESPECT NULLS and COUNT over named ROWS/RANGE windows, pumps STOPPED, GROUP BY FLOOR((ROWTIME - TIMESTAMP ...) SECOND / 30 TO SECOND); fully quoted schema-qualified names
-- dialect: sqlstream
-- check: ok
DROP SCHEMA "StreamLab_Output_cdr" CASCADE;
CREATE OR REPLACE SCHEMA "StreamLab_Output_cdr";
-- StreamApp start

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN STREAM "StreamLab_Output_cdr"."calls_in_fs"
(
    "calltime" INTEGER,
    "msisdn" VARCHAR(32),
    "imei" VARCHAR(32),
    "band" VARCHAR(256),
    "new_handset" TINYINT
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" '|',
        "SKIP_HEADER" 'true',

        "DIRECTORY" '/srv/cdr/in',
        "FILENAME_PATTERN" 'calls\.csv'

);
CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."calls_in" AS
SELECT STREAM * FROM "StreamLab_Output_cdr"."calls_in_fs";

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_cdr"."handsets_table"
(
    "TAC" VARCHAR(8),
    "Marketing Name" VARCHAR(32),
    "Maker" VARCHAR(16),
    "Bands" VARCHAR(256),
    "Radio Interface" VARCHAR(4),
    "Brand Name" VARCHAR(16),
    "Model Name" VARCHAR(32),
    "Operating System" VARCHAR(16),
    "Device Type" VARCHAR(8)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" '|',
        "SKIP_HEADER" 'true',

        "DIRECTORY" '/srv/cdr/ref',
        "FILENAME_PATTERN" 'handsets.csv'

);
CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."handsets" AS
SELECT  * FROM "StreamLab_Output_cdr"."handsets_table";

-- ECDA reading adapter/agent with Discovery support

CREATE OR REPLACE FOREIGN TABLE "StreamLab_Output_cdr"."lines_table"
(
    "msisdn" VARCHAR(16),
    "imei" VARCHAR(32),
    "band" VARCHAR(1024),
    "rewarded" VARCHAR(4)
)

    SERVER "FILE_SERVER"

OPTIONS (
"PARSER" 'CSV',
        "CHARACTER_ENCODING" 'UTF-8',
        "SEPARATOR" '|',
        "SKIP_HEADER" 'true',

        "DIRECTORY" '/srv/cdr/in',
        "FILENAME_PATTERN" 'lines.csv'

);
CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."lines" AS
SELECT  * FROM "StreamLab_Output_cdr"."lines_table";

-- create a new stream as a sink

CREATE OR REPLACE SCHEMA "StreamLab_Output_cdr";

CREATE OR REPLACE STREAM "StreamLab_Output_cdr"."tagged_calls"(
    "first_5g" CHAR(1),
    "had_5g" CHAR(1),
    "line_5g" CHAR(1),
    "is_5g" CHAR(1),
    "calltime" TIMESTAMP,
    "msisdn" VARCHAR(32),
    "imei" VARCHAR(32),
    "tac" VARCHAR(32),
    "Marketing Name" VARCHAR(32),
    "Maker" VARCHAR(16),
    "Bands" VARCHAR(256),
    "Brand Name" VARCHAR(16),
    "Model Name" VARCHAR(32),
    "Operating System" VARCHAR(16),
    "line_imei" VARCHAR(32),
    "line_band" VARCHAR(1024)
);

-- create a new stream as a sink

CREATE OR REPLACE SCHEMA "StreamLab_Output_cdr";

CREATE OR REPLACE STREAM "StreamLab_Output_cdr"."tagged_calls_2"(
    "offer_due" CHAR(1),
    "upgrade_count" BIGINT,
    "first_5g" CHAR(1),
    "had_5g" CHAR(1),
    "line_5g" CHAR(1),
    "is_5g" CHAR(1),
    "calltime" TIMESTAMP,
    "msisdn" VARCHAR(32),
    "imei" VARCHAR(32),
    "tac" VARCHAR(32),
    "Marketing Name" VARCHAR(32),
    "Maker" VARCHAR(16),
    "Bands" VARCHAR(256),
    "Brand Name" VARCHAR(16),
    "Model Name" VARCHAR(32),
    "Operating System" VARCHAR(16),
    "line_imei" VARCHAR(32),
    "line_band" VARCHAR(1024),
    "line_rewarded" VARCHAR(4)
);

!step=e2001,text=pipeline_1 1: Convert calltime as Unix seconds to a SQL timestamp.  Promote to ROWTIME: .
-- Timestamp Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_1" AS
    SELECT STREAM MILLIS_TO_TIMESTAMP(CAST("calltime" AS BIGINT) * 1000) AS "calltime","msisdn","imei","band","new_handset"
    FROM "StreamLab_Output_cdr"."calls_in" AS "input";

!step=e2002,text=pipeline_1 2: Extract text from imei into tac, starting at 1 for 8 characters.
-- Extract Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_2" AS
    SELECT STREAM "calltime","msisdn","imei",SUBSTRING("imei",1,8) AS "tac","band","new_handset"
    FROM "StreamLab_Output_cdr"."pipeline_1_step_1" AS "input";

!step=e2003,text=pipeline_1 3: Perform a join of type: (left window none) inner join to table StreamLab_Output_cdr.handsets (right window none) Join conditions: Join tac with TAC. 
-- Join Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_3" AS
    SELECT STREAM "input".*, "rhs"."Marketing Name", "rhs"."Maker", "rhs"."Bands", "rhs"."Radio Interface", "rhs"."Brand Name", "rhs"."Model Name", "rhs"."Operating System", "rhs"."Device Type"
    FROM "StreamLab_Output_cdr"."pipeline_1_step_2"   AS "input"
    INNER JOIN "StreamLab_Output_cdr"."handsets"  AS "rhs"
        ON ("input"."tac" = "rhs"."TAC")  ;

!step=e2004,text=pipeline_1 4: Drop the columns Radio Interface,Device Type,band,new_handset
-- Drop Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_4" AS
    SELECT STREAM "calltime","msisdn","imei","tac","Marketing Name","Maker","Bands","Brand Name","Model Name","Operating System"
    FROM "StreamLab_Output_cdr"."pipeline_1_step_3" AS "input";

!step=e2005,text=pipeline_1 5: Create a new column named is_5g containing (CASE WHEN POSITION('NR' in "Bands") > 0 THEN 'Y' ELSE 'N' END)
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_5" AS
    SELECT STREAM
           (CASE WHEN POSITION('NR' in "Bands") > 0 THEN 'Y' ELSE 'N' END) AS "is_5g", *
    FROM "StreamLab_Output_cdr"."pipeline_1_step_4" AS "input";

!step=e2006,text=pipeline_1 6: Perform a join of type: (left window none) left join to table StreamLab_Output_cdr.lines (right window none) Join conditions: Join msisdn with msisdn. 
-- Join Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_6" AS
    SELECT STREAM "input".*, "rhs"."imei" AS "t_imei", "rhs"."band", "rhs"."rewarded"
    FROM "StreamLab_Output_cdr"."pipeline_1_step_5"   AS "input"
    LEFT JOIN "StreamLab_Output_cdr"."lines"  AS "rhs"
        ON ("input"."msisdn" = "rhs"."msisdn")  ;

!step=e2007,text=pipeline_1 7: Rename columns t_imei,band,rewarded to line_imei,line_band,line_rewarded
--  Bulk Rename Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_7" AS
    SELECT STREAM "is_5g","calltime","msisdn","imei","tac","Marketing Name","Maker","Bands","Brand Name","Model Name","Operating System","t_imei" AS "line_imei","band" AS "line_band","rewarded" AS "line_rewarded"
    FROM "StreamLab_Output_cdr"."pipeline_1_step_6" AS "input";

!step=e2008,text=pipeline_1 8: Create a new column named line_5g containing (CASE WHEN POSITION('NR' in "line_band") > 0 THEN 'Y' ELSE 'N' END)
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_8" AS
    SELECT STREAM
           (CASE WHEN POSITION('NR' in "line_band") > 0 THEN 'Y' ELSE 'N' END) AS "line_5g", *
    FROM "StreamLab_Output_cdr"."pipeline_1_step_7" AS "input";

!step=e2009,text=pipeline_1 9: For each msisdn, over a rows window from unbounded preceding: the 2nd value from last of is_5g as had_5g.
-- Aggregate Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_9" AS
    SELECT STREAM NTH_VALUE("is_5g",2) FROM LAST RESPECT NULLS OVER "aWindow" AS "had_5g",*
    FROM "StreamLab_Output_cdr"."pipeline_1_step_8" AS "input"
    WINDOW "aWindow" AS (PARTITION BY "msisdn" ROWS unbounded preceding) ;

!step=e2010,text=pipeline_1 10: Create a new column named first_5g
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_10" AS
    SELECT STREAM
           (CASE WHEN "is_5g" = 'Y' and coalesce("had_5g","line_5g") = 'N' THEN 'Y' ELSE null END) AS "first_5g", *
    FROM "StreamLab_Output_cdr"."pipeline_1_step_9" AS "input";

!step=e2011,text=pipeline_1 11: For each msisdn, over a rows window from unbounded preceding: the count of first_5g as upgrade_count.
-- Aggregate Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_11" AS
    SELECT STREAM COUNT("first_5g") OVER "aWindow" AS "upgrade_count",*
    FROM "StreamLab_Output_cdr"."pipeline_1_step_10" AS "input"
    WINDOW "aWindow" AS (PARTITION BY "msisdn" ROWS unbounded preceding) ;

!step=e2012,text=pipeline_1 12: Create a new column named offer_due
-- New Column Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_step_12" AS
    SELECT STREAM
           (CASE WHEN "upgrade_count" = 1 and "line_rewarded" = 'N' THEN 'Y' ELSE null END) AS "offer_due", *
    FROM "StreamLab_Output_cdr"."pipeline_1_step_11" AS "input";

!step=e2013,text=pipeline_1 13: Route to stream "StreamLab_Output_cdr"."tagged_calls_2"

-- Define the pump

CREATE OR REPLACE PUMP "StreamLab_Output_cdr"."pipeline_1_step_13-to-tagged_calls_2-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_cdr"."tagged_calls_2" 
SELECT STREAM *
    FROM "StreamLab_Output_cdr"."pipeline_1_step_12" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_1_out" AS SELECT STREAM * FROM "StreamLab_Output_cdr"."pipeline_1_step_12";

!step=e2014,text=pipeline_2 1: Over a sliding 1 day window: count of offer_due as offers_today, count of msisdn as calls_today.
-- Aggregate Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_2_step_1" AS
    SELECT STREAM COUNT("msisdn") OVER "aWindow" AS "calls_today",COUNT("offer_due") OVER "aWindow" AS "offers_today","offer_due","upgrade_count","first_5g","had_5g","line_5g","is_5g","calltime","msisdn","imei","tac","Marketing Name","Maker","Bands","Brand Name","Model Name","Operating System","line_imei","line_band","line_rewarded"
    FROM "StreamLab_Output_cdr"."tagged_calls_2" AS "input"
    WINDOW "aWindow" AS (RANGE INTERVAL '1' DAY PRECEDING) ;

!step=e2015,text=pipeline_2 2: Accept rows where offer_due is equal to Y
-- Filter Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_2_step_2" AS
    SELECT STREAM *
    FROM "StreamLab_Output_cdr"."pipeline_2_step_1" AS "input"
    WHERE "offer_due" = 'Y';

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_2_out" AS SELECT STREAM * FROM "StreamLab_Output_cdr"."pipeline_2_step_2";

!step=e2016,text=pipeline_3 1: Over a sliding 5 minute window: count of offer_due as offers_5_min, count of msisdn as calls_5_min.
-- Aggregate Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_3_step_1" AS
    SELECT STREAM COUNT("offer_due") OVER "aWindow" AS "offers_5_min",COUNT("msisdn") OVER "aWindow" AS "calls_5_min",*
    FROM "StreamLab_Output_cdr"."tagged_calls_2" AS "input"
    WINDOW "aWindow" AS (RANGE INTERVAL '5' MINUTE PRECEDING) ;

!step=e2017,text=pipeline_3 2: Time series plot of offers_5_min,calls_5_min
-- Time Series Dashboard

CREATE OR REPLACE STREAM "StreamLab_Output_cdr"."dashboard_pipeline_3_step_2"(
"offers_5_min" BIGINT NOT NULL, "calls_5_min" BIGINT NOT NULL, "offer_due" CHAR(1), "upgrade_count" BIGINT, "first_5g" CHAR(1), "had_5g" CHAR(1), "line_5g" CHAR(1), "is_5g" CHAR(1), "calltime" TIMESTAMP, "msisdn" VARCHAR(32), "imei" VARCHAR(32), "tac" VARCHAR(32), "Marketing Name" VARCHAR(32), "Maker" VARCHAR(16), "Bands" VARCHAR(256), "Brand Name" VARCHAR(16), "Model Name" VARCHAR(32), "Operating System" VARCHAR(16), "line_imei" VARCHAR(32), "line_band" VARCHAR(1024), "line_rewarded" VARCHAR(4));

CREATE OR REPLACE PUMP "StreamLab_Output_cdr"."dashboard_pipeline_3_step_2-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_cdr"."dashboard_pipeline_3_step_2" 
SELECT STREAM * FROM "StreamLab_Output_cdr"."pipeline_3_step_1" AS "input";

!step=e2018,text=pipeline_3 3: Group by Operating System over a tumbling 30 second window: count of offer_due as offers_30s, count of msisdn as calls_30s.
-- Aggregate Operation

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_3_step_3" AS
    SELECT STREAM COUNT("offer_due") AS "offers_30s",COUNT("msisdn") AS "calls_30s","Operating System"
    FROM "StreamLab_Output_cdr"."dashboard_pipeline_3_step_2" AS "input"
    GROUP BY FLOOR(("input"."ROWTIME" - TIMESTAMP '1970-01-01 00:00:00') SECOND/30 to SECOND), "Operating System" ;

!step=e2019,text=pipeline_3 4: Bar graph of offers_30s,calls_30s by Operating System
-- Bars Over Key Dashboard

CREATE OR REPLACE STREAM "StreamLab_Output_cdr"."dashboard_pipeline_3_step_4"(
"offers_30s" BIGINT NOT NULL, "calls_30s" BIGINT NOT NULL, "Operating System" VARCHAR(16));

CREATE OR REPLACE PUMP "StreamLab_Output_cdr"."dashboard_pipeline_3_step_4-Pump" STOPPED AS
INSERT INTO "StreamLab_Output_cdr"."dashboard_pipeline_3_step_4" 
SELECT STREAM * FROM "StreamLab_Output_cdr"."pipeline_3_step_3" AS "input";

CREATE OR REPLACE VIEW "StreamLab_Output_cdr"."pipeline_3_out" AS SELECT STREAM * FROM "StreamLab_Output_cdr"."dashboard_pipeline_3_step_4";

-- StreamApp end
