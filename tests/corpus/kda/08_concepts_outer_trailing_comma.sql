-- source: awsdocs/amazon-kinesis-data-analytics-developer-guide:doc_source/stream-joins-concepts.md, commit d32ce9803b3391f4c548c0c9e374834f97247326 (2023-06-15) ("Streaming Data Operations: Stream Joins", the outer join query)
-- modeled on: LEFT OUTER JOIN with the RANGE window on the right side, selecting right-side columns too; kept as published with the stray comma before FROM
-- dialect: kda
-- check: 08_concepts_outer_trailing_comma.sql:13:48: error: syntax error: a comma before FROM
-- fair rejection: the program is broken as published: a stray comma after the last select column, before FROM
-- config (the example's in-application streams, which the source does not declare):
CREATE STREAM RequestStream (requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/requests');
CREATE STREAM QuoteStream (quoteId INTEGER, requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/quotes');
-- program:
SELECT STREAM
    ROWTIME, 
    r.requestId, r.route, r.weight AS requestWeight,
    q.route, q.quoteId, q.weight AS quoteWeight,
FROM RequestStream AS r
LEFT OUTER JOIN QuoteStream OVER (RANGE INTERVAL '3' MINUTE PRECEDING) AS q
ON    r.requestId = q.requestId;
