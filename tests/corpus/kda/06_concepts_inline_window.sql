-- source: awsdocs/amazon-kinesis-data-analytics-developer-guide:doc_source/stream-joins-concepts.md, commit d32ce9803b3391f4c548c0c9e374834f97247326 (2023-06-15) ("Streaming Data Operations: Stream Joins", Example 1, first query)
-- modeled on: a bare SELECT STREAM (no pump) joining two in-application streams written unquoted in CamelCase, inline OVER (RANGE INTERVAL ... PRECEDING) on the right side, bare ROWTIME in the select list, unquoted camelCase columns
-- dialect: kda
-- check: ok
-- config (the example's in-application streams, which the source does not declare):
CREATE STREAM RequestStream (requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/requests');
CREATE STREAM QuoteStream (quoteId INTEGER, requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/quotes');
-- program:
SELECT STREAM
     ROWTIME, 
     r.requestId, r.route, r.weight AS requestWeight,
     q.weight AS quoteWeight
FROM RequestStream AS r
JOIN QuoteStream OVER (RANGE INTERVAL '3' MINUTE PRECEDING) AS q
ON   r.requestId = q.requestId;
