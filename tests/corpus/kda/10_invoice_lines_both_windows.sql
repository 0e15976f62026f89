-- source: rvvittal/kinesis-streaming-joins:resources/kda-orders-setup.sql, commit 07dcacec2193294e0a8b5b931f966b35ffa0c3c3
-- modeled on: one mixed-record input split by a "recordType" filter into two quoted UPPER in-app streams (pumps with INSERT column lists that leave a declared column unfilled), then a pump joining them unquoted with RANGE windows on both sides, bare ROWTIME inserted into an "event_ts" column, camelCase quoted columns, DECIMAL(1,1) as declared
-- dialect: kda
-- check: ok
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("invoiceId" INTEGER, "invoiceTotal" DECIMAL(1,1), "invoiceStatus" VARCHAR(8), "invoiceDateTime" TIMESTAMP, "billToName" VARCHAR(32), "billToCity" VARCHAR(32), "billToCountry" VARCHAR(16), "lineId" INTEGER, "lineAmount" DECIMAL(1,1), "lineStatus" VARCHAR(8), "lineUnits" INTEGER, "recordType" VARCHAR(16)) WITH (connector = 'files', format = 'json', path = '/data/source');
-- program:
CREATE OR REPLACE STREAM "INVOICESTREAM"(
   "invoiceId" INTEGER, 
   "invoiceTotal" DECIMAL(1,1),
   "invoiceStatus" VARCHAR(8),
   "invoiceDateTime" TIMESTAMP,
   "billToName" VARCHAR(32),
   "billToCity" VARCHAR(32),
   "billToCountry" VARCHAR(16),
   "recordType" VARCHAR(16));
   
CREATE OR REPLACE STREAM "INVOICELINESTREAM"(
   "invoiceId" INTEGER, 
   "lineId" INTEGER, 
   "lineAmount" DECIMAL(1,1),
   "lineStatus" VARCHAR(8),
   "lineUnits" INTEGER, 
   "invoiceDateTime" TIMESTAMP,
   "recordType" VARCHAR(16));
   
CREATE OR REPLACE STREAM "INVOICE_LINE_ENRICHED_STREAM"(
   "event_ts" TIMESTAMP,
   "invoiceId" INTEGER, 
   "invoiceTotal" DECIMAL(1,1),
   "invoiceStatus" VARCHAR(8),
   "invoiceDateTime" TIMESTAMP,
   "billToName" VARCHAR(32),
   "billToCity" VARCHAR(32),
   "billToCountry" VARCHAR(16),
    "lineId" INTEGER, 
   "lineAmount" DECIMAL(1,1),
    "lineUnits" INTEGER, 
   "lineStatus" VARCHAR(8) 
   );
   
CREATE OR REPLACE PUMP "INVOICEPUMP" AS 
INSERT INTO "INVOICESTREAM" (
			  "invoiceId", 
                          "invoiceTotal", 
                          "invoiceStatus",
                          "invoiceDateTime",
                          "billToName",
                          "billToCity",
                          "billToCountry",
                          "recordType"
                    	  ) 
SELECT STREAM 
	  "invoiceId", 
              "invoiceTotal", 
              "invoiceStatus",
              "invoiceDateTime",
              "billToName",
              "billToCity",
              "billToCountry",
              "recordType"
FROM "SOURCE_SQL_STREAM_001" where "recordType" = 'Invoice';

CREATE OR REPLACE PUMP "INVOICELINEPUMP" AS 
INSERT INTO "INVOICELINESTREAM" (
			  "invoiceId", 
			  "lineId",
                          "lineAmount", 
                          "lineUnits",
                          "lineStatus",
                          "recordType"
                    	  ) 
SELECT STREAM 
	  "invoiceId", 
	  "lineId",
              "lineAmount", 
              "lineUnits",
              "lineStatus",
              "recordType"
FROM "SOURCE_SQL_STREAM_001" where "recordType" = 'InvoiceLine';

CREATE OR REPLACE PUMP "INVOICE_LINE_ENRICHED_PUMP" AS 
INSERT INTO "INVOICE_LINE_ENRICHED_STREAM" (
                          "event_ts",
			  "invoiceId", 
			  "invoiceTotal", 
			  "invoiceStatus",
			  "invoiceDateTime",
			  "billToName",
			  "billToCity",
			  "billToCountry",
			  "lineId",
                          "lineAmount", 
                          "lineUnits",
                          "lineStatus"
                    	  ) 

SELECT STREAM
     ROWTIME,
     v."invoiceId", v."invoiceTotal", v."invoiceStatus", v."invoiceDateTime", v."billToName",v."billToCity", v."billToCountry", 
     l."lineId", l."lineAmount", l."lineUnits", l."lineStatus"
FROM INVOICELINESTREAM OVER (RANGE INTERVAL '2' MINUTE PRECEDING)  AS l
JOIN INVOICESTREAM OVER (RANGE INTERVAL '2' MINUTE PRECEDING)  AS v
ON   l."invoiceId" = v."invoiceId";
