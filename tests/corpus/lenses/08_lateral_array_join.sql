-- source: https://docs.lenses.io/latest/~gitbook/pdf?page=nzJS6cI8DbJFNzlnLtOQ&only=yes (Lenses SQL Processors, "Lateral Joins")
-- modeled on: processor flattening an array field with a lateral join (`FROM source LATERAL arrayField AS item`), filtering on the element, INSERT INTO a topic named like the array field
-- dialect: lenses
-- check: 08_lateral_array_join.sql:15:13: error: LATERAL is not supported: it flattens a column of each row, it joins no other input
-- fair rejection: a LATERAL array flattening is not a join of two inputs (outside joins' scope); but the message does not name LATERAL, and a variant that does not select the element is accepted with the LATERAL silently dropped
-- topics (declared in Kafka, not in the program):
CREATE STREAM batched_scores (_key VARCHAR, player_id INT, scores ARRAY<INT>) WITH (connector = 'files', format = 'json', path = '/data/batched-scores');
-- program:
INSERT INTO scores
SELECT STREAM
    player_id,
    score
FROM
    batched_scores
    LATERAL scores AS score
WHERE
    score > 50
