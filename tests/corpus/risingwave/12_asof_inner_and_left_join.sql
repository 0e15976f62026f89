-- source: risingwavelabs/risingwave:e2e_test/streaming/join/asof_join.slt.part (the "asof inner join" and "asof left join" cases; INSERTs, checks and per-case drops left out), snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: SET RW_IMPLICIT_FLUSH, two tables with a column-level primary key, an MV with t1 ASOF JOIN t2 ON t1.k = t2.k and t1.x <= t2.x and one with t1 ASOF LEFT JOIN t2 ON ... and t1.x > t2.x, output columns aliased without AS
-- dialect: risingwave
-- check: ok
SET RW_IMPLICIT_FLUSH TO true;

create table fills (sym int, seq int, qty int, fill_id int primary key);

create table quotes (sym int, seq int, quote_id int primary key);

create materialized view next_quote as SELECT fills.sym f_sym, fills.seq f_seq, fills.qty f_qty, fills.fill_id f_id, quotes.sym q_sym, quotes.seq q_seq, quotes.quote_id q_id FROM fills ASOF JOIN quotes ON fills.sym = quotes.sym and fills.seq <= quotes.seq;

create materialized view prior_quote as SELECT fills.sym f_sym, fills.seq f_seq, fills.qty f_qty, quotes.sym q_sym, quotes.seq q_seq, quotes.quote_id q_id FROM fills ASOF LEFT JOIN quotes ON fills.sym = quotes.sym and fills.seq > quotes.seq;
