-- source: https://docs.lenses.io/4.0/sql/streaming/joins/ (Lenses 4.0 docs, "Joins", section "Stream-Table/Table-Stream joins: table materialization")
-- modeled on: the published example kept as written: `WITH xStream AS (SELECT TABLE * FROM t);` and a stream view, then `INSERT INTO result SELECT TABLE ... FROM stream OUTER JOIN tableView ON <a name not in scope>.id = stream.fk;`
-- dialect: lenses
-- check: 11_table_materialization_as_published.sql:19:12: error: unknown input 'accountstable' in accountstable.id
-- fair rejection: broken SQL as published (ON names `accountsTable`, not in scope); corrected, it is still rejected by design (OUTER JOIN preserving a table view against an unbucketed stream, SEMANTICS.md §7)
-- topics (declared in Kafka, not in the program):
CREATE STREAM accounts (_key INTEGER, id INTEGER, owner VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/accounts');
CREATE STREAM transfers (_key INTEGER, account_id INTEGER, amount INTEGER) WITH (connector = 'files', format = 'json', path = '/data/transfers');
-- program:
WITH accountsStream AS (SELECT TABLE * FROM accounts);
WITH transfersStream AS (SELECT STREAM * FROM transfers);

INSERT INTO result
SELECT TABLE
    accountsStream.owner
   , transfersStream.amount
 FROM
    transfersStream OUTER JOIN accountsStream
        ON accountsTable.id = transfersStream.account_id;
