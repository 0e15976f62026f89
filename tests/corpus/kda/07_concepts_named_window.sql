-- source: awsdocs/amazon-kinesis-data-analytics-developer-guide:doc_source/stream-joins-concepts.md, commit d32ce9803b3391f4c548c0c9e374834f97247326 (2023-06-15) ("Streaming Data Operations: Stream Joins", Example 1, the WINDOW clause variant)
-- modeled on: the same join with the window named in a trailing WINDOW clause (OVER q ... WINDOW q AS (...)); as published, the right side gets no AS alias and the window's name is then used as if it were that alias (q.col); no final semicolon
-- dialect: kda
-- check: 07_concepts_named_window.sql:16:18: error: unknown input 'q' in q.requestid
-- fair rejection: the program is broken as published: the right side has no alias, and the WINDOW name is then used as a table alias (t.orderId), which names no input
-- config (the example's in-application streams, which the source does not declare):
CREATE STREAM RequestStream (requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/requests');
CREATE STREAM QuoteStream (quoteId INTEGER, requestId INTEGER, route VARCHAR(8), weight DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/quotes');
-- program:
SELECT STREAM
    ROWTIME, 
    r.requestId, r.route, r.weight AS requestWeight,
    q.weight AS quoteWeight
FROM RequestStream AS r
JOIN QuoteStream OVER q
ON r.requestId = q.requestId
WINDOW q AS
    (RANGE INTERVAL '3' MINUTE PRECEDING)
