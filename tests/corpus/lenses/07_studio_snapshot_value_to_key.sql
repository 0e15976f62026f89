-- source: https://docs.lenses.io/latest/user-guide/sql/sql-studio/joins (Lenses SQL Studio, "Joins"; same text in docs.lenses.io/latest/user-guide/using/using-sql-to-query-kafka/joining-topics)
-- modeled on: SQL Studio (snapshot engine) query joining two topics with short aliases (`FROM a o INNER JOIN b c ON o.field = c._key`), projecting `o._key AS ...`; plain SELECT (no STREAM/TABLE), no semicolon; the page's CREATE TABLE ... FORMAT(int, avro) / INSERT ... VALUES set-up is replaced by the declarations below
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM shipments (_key INT, shippedOn VARCHAR, carrierId VARCHAR, weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/shipments');
CREATE STREAM carrier (_key VARCHAR, companyName VARCHAR, contactName VARCHAR, city VARCHAR, country VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/carrier');
-- program:
SELECT 
    s._key AS shipmentNumber
    , s.weight AS totalWeight
    , k.companyName
    , k.contactName
    , k.city
    , k.country
FROM shipments s INNER JOIN carrier k
    ON s.carrierId = k._key
