-- source: awsdocs/amazon-kinesis-data-analytics-developer-guide:doc_source/app-add-reference-data.md, commit d32ce9803b3391f4c548c0c9e374834f97247326 (2023-06-15) ("Example: Adding Reference Data to a Kinesis Data Analytics Application", Step 3)
-- modeled on: stock-ticker enrichment: the input stream LEFT JOINs the S3 reference table (mixed-case quoted name, quoted alias "c"); unquoted output/input columns folded to UPPER, quoted "Company"-style column, ON qualified by the full quoted stream name
-- dialect: kda
-- check: ok
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("AIRPORT_CODE" VARCHAR(4), "REGION" VARCHAR(12), "DELAY" DOUBLE, "FARE" DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/source');
CREATE TABLE "AirportName" ("Code" VARCHAR(4) PRIMARY KEY, "Airport" VARCHAR(40)) WITH (connector = 'files', format = 'csv', path = '/data/airports');
-- program:
CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (airport_code VARCHAR(4), "Airport" varchar(40), region VARCHAR(12), delay DOUBLE, fare DOUBLE);

CREATE OR REPLACE PUMP "STREAM_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM"
   SELECT STREAM airport_code, "a"."Airport", region, delay, fare
   FROM "SOURCE_SQL_STREAM_001" LEFT JOIN "AirportName" as "a"
   ON "SOURCE_SQL_STREAM_001".airport_code = "a"."Code";
