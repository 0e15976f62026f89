"""SEMANTICS.md §9: every rejected query fails before reading data, naming the construct,
its line and column, and what is allowed instead."""

from pathlib import Path

import pytest
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql

DDL = """CREATE STREAM orders (id INT, ticker VARCHAR, qty INT);
CREATE STREAM prices (ticker VARCHAR, price INT);
CREATE STREAM beast_events (row_id INT, animal_id INT);
CREATE TABLE animal_data (animal_id INT PRIMARY KEY, edible BOOLEAN, name VARCHAR);
CREATE TABLE city_info (city VARCHAR PRIMARY KEY, region VARCHAR);
CREATE STREAM city_sales (city VARCHAR, total INT);
"""
FIRST_QUERY_LINE = DDL.count("\n") + 1


def rejection(query: str) -> SqlError:
    with pytest.raises(SqlError) as caught:
        compile_sql(DDL + query, "q.sql")
    return caught.value


def at(error: SqlError) -> tuple[int, int]:
    """(line within the query, column)"""
    return error.line - FIRST_QUERY_LINE + 1, error.col


def test_theta_join_against_a_table_is_rejected_at_its_condition():
    error = rejection("SELECT STREAM * from beast_events e left join animal_data a on (e.animal_id > a.animal_id);")
    assert error.message == "stream-table join must be an equi-join"
    assert at(error) == (1, 65)  # the condition's first token
    assert "ON s.k = t.k" in error.hint


def test_table_preserving_outer_join_against_an_unbucketed_stream_is_rejected():
    error = rejection("SELECT STREAM *\nFROM city_sales AS cs\n  RIGHT JOIN city_info AS ci USING (city);")
    assert error.message.startswith("an outer join must be one-sided")
    assert at(error) == (3, 3)
    assert "FLOOR(ROWTIME TO HOUR)" in error.hint


def test_full_join_of_stream_and_table_is_rejected_as_table_preserving():
    error = rejection("SELECT STREAM * FROM beast_events e FULL JOIN animal_data a USING (animal_id);")
    assert error.message.startswith("an outer join must be one-sided")


def test_on_with_cross_join_is_rejected_at_the_condition():
    error = rejection("SELECT STREAM * FROM orders o\nCROSS JOIN prices p ON o.ticker = p.ticker;")
    assert error.message == "CROSS JOIN takes no ON or USING condition"
    assert at(error) == (2, 24)


def test_using_column_missing_on_the_right_is_rejected_at_the_column():
    error = rejection("SELECT STREAM * FROM orders o JOIN prices p USING (qty);")
    assert error.message == "USING column 'qty' is not a column of the right input 'p'"
    assert at(error) == (1, 52)


def test_using_column_missing_on_the_left_is_rejected_at_the_column():
    error = rejection("SELECT STREAM * FROM prices p JOIN orders o USING (ticker, qty);")
    assert error.message == "USING column 'qty' is not a column of the left input"
    assert at(error) == (1, 60)


def test_natural_join_with_no_common_column_is_rejected_at_the_join():
    error = rejection("SELECT STREAM * FROM orders o NATURAL JOIN animal_data a;")
    assert error.message == "NATURAL JOIN: the inputs have no column in common"
    assert at(error) == (1, 31)


def test_unknown_column_is_rejected_with_the_closest_names():
    error = rejection("SELECT STREAM o.tickr FROM orders o JOIN prices p ON o.ticker = p.ticker;")
    assert error.message == "unknown column 'o.tickr'"
    assert at(error) == (1, 15)
    assert error.hint == "did you mean ticker?"


def test_ambiguous_column_is_rejected_naming_the_candidates():
    error = rejection("SELECT STREAM ticker\n  FROM orders o JOIN prices p ON o.ticker = p.ticker;")
    assert error.message == "column 'ticker' is ambiguous"
    assert at(error) == (1, 15)
    assert error.hint == "qualify it: o.ticker or p.ticker"


def test_column_of_a_later_input_is_unknown_in_an_earlier_on():
    error = rejection(
        "SELECT STREAM * FROM orders o JOIN prices p ON o.ticker = z.ticker JOIN prices z ON z.ticker = o.ticker;"
    )
    assert error.message == "unknown input 'z' in z.ticker"
    assert "o, p" in error.hint


def test_window_on_a_table_is_rejected_at_over():
    error = rejection(
        "SELECT STREAM * FROM beast_events e\n"
        "  JOIN animal_data OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a USING (animal_id);"
    )
    assert error.message == "a window applies to a stream; 'animal_data' is a table"
    assert at(error) == (2, 20)


def test_rows_with_a_negative_count_is_rejected():
    error = rejection("SELECT STREAM * FROM orders OVER (ROWS -3 PRECEDING) AS o JOIN prices p USING (ticker);")
    assert error.message == "ROWS needs a non-negative row count"
    assert at(error) == (1, 41)  # the count


def test_following_in_a_join_window_is_rejected_as_unsupported():
    error = rejection("SELECT STREAM * FROM orders OVER (RANGE BETWEEN CURRENT ROW AND INTERVAL '1' MINUTE FOLLOWING) AS o, prices p;")
    assert error.message == "FOLLOWING is not supported in a join window"


def test_calendar_units_in_a_range_window_are_rejected_honestly():
    error = rejection("SELECT STREAM * FROM orders OVER (RANGE INTERVAL '1' MONTH PRECEDING) AS o JOIN prices p USING (ticker);")
    assert error.message.startswith("unsupported interval")
    assert "calendar unit" in error.message


def test_subquery_in_from_is_rejected_with_the_view_alternative():
    error = rejection("SELECT STREAM * FROM (SELECT STREAM * FROM orders) AS o JOIN prices p USING (ticker);")
    assert error.message == "unsupported FROM item: SUBQUERY"
    assert "CREATE VIEW" in error.hint


def test_unknown_stream_is_rejected_with_the_declared_names():
    error = rejection("SELECT STREAM * FROM ordrs AS o;")
    assert error.message == "unknown stream or table 'ordrs'"
    assert error.hint == "did you mean orders?"


def test_process_time_join_must_cover_the_primary_key():
    error = rejection(
        "SELECT STREAM * FROM beast_events e JOIN animal_data FOR SYSTEM_TIME AS OF PROCTIME() AS a ON e.row_id = a.edible;"
    )
    assert error.message == "the condition must cover the primary key of 'animal_data' (animal_id)"


def test_process_time_join_must_be_inner_or_left():
    error = rejection(
        "SELECT STREAM * FROM beast_events e FULL JOIN animal_data FOR SYSTEM_TIME AS OF PROCTIME() AS a ON e.animal_id = a.animal_id;"
    )
    assert error.message == "a process-time temporal join is INNER or LEFT, not FULL"


def test_asof_join_needs_one_inequality():
    error = rejection("SELECT STREAM * FROM orders o ASOF JOIN prices p ON o.ticker = p.ticker;")
    assert error.message == "ASOF JOIN needs exactly one inequality between the two sides"


def test_window_join_needs_equal_sizes():
    error = rejection(
        "SELECT * FROM TUMBLE(orders, rowtime, INTERVAL '1' MINUTE) JOIN TUMBLE(prices, rowtime, INTERVAL '2' MINUTE) "
        "ON orders.ticker = prices.ticker AND orders.window_start = prices.window_start;"
    )
    assert error.message == "a window join needs the same window function, size and offset on both sides"


def test_join_without_condition_between_unkeyed_inputs_is_rejected():
    error = rejection("SELECT STREAM * FROM orders o JOIN prices p;")
    assert error.message == "JOIN needs a condition: ON, USING or NATURAL"


def test_parse_error_points_at_the_offending_token():
    error = rejection("SELECT STREAM *\nFROM orders o JOIN prices p ON ON;")
    assert error.message.startswith("syntax error")
    assert at(error) == (2, 32)


def test_emit_needs_a_mode():
    error = rejection("SELECT STREAM * FROM orders o EMIT SOMETIMES;")
    assert error.message == "syntax error: EMIT must be followed by FINAL, EAGER or CHANGES"
    assert at(error) == (1, 36)


def test_lenses_outer_join_of_a_stream_and_a_table_is_rejected_by_semantics():
    # Seed 004's "table materialization" example joins ordersStream OUTER JOIN a SELECT TABLE view.
    # Lenses runs it; SEMANTICS.md §7 decides: preserving the table side needs a bucketed stream.
    sql = (Path(__file__).parent / "fixtures" / "rejected" / "s004_table_materialization.sql").read_text()
    with pytest.raises(SqlError) as caught:
        compile_sql(sql, "s004.sql")
    assert caught.value.message.startswith("an outer join must be one-sided")


def test_error_text_is_file_line_col_then_hint():
    error = SqlError("bad thing", "q.sql", 3, 7, "do this")
    assert str(error) == "q.sql:3:7: error: bad thing\n  hint: do this"


def test_unbounded_window_is_rejected_not_a_crash():
    error = rejection("SELECT STREAM * FROM orders OVER (ROWS UNBOUNDED PRECEDING) AS o JOIN prices p USING (ticker);")
    assert error.message.startswith("an UNBOUNDED window is not supported")
    assert at(error) == (1, 29)


def test_within_on_a_later_join_may_not_change_windows_an_earlier_join_used():
    error = rejection(
        "SELECT STREAM * FROM orders o JOIN prices p ON o.ticker = p.ticker JOIN orders o2 ON o2.ticker = p.ticker WITHIN 10s;"
    )
    assert error.message == "WITHIN here would change the window of 'o', which an earlier join already used"


def test_interval_condition_on_a_later_join_may_not_change_windows_an_earlier_join_used():
    error = rejection(
        "SELECT STREAM * FROM orders o JOIN prices p ON o.ticker = p.ticker JOIN orders o2 ON o2.ticker = p.ticker "
        "AND o2.ROWTIME BETWEEN p.ROWTIME - INTERVAL '1' MINUTE AND p.ROWTIME + INTERVAL '1' MINUTE;"
    )
    assert error.message == "this interval condition would change the window of 'p', which an earlier join already used"


def test_within_given_twice_with_different_durations_is_rejected():
    error = rejection("SELECT STREAM * FROM orders o JOIN prices p WITHIN 5s ON o.ticker = p.ticker WITHIN 10s;")
    assert error.message == "syntax error: WITHIN is given twice with different durations"
    assert at(error) == (1, 78)


def test_using_column_next_to_an_unmerged_same_name_is_ambiguous():
    error = rejection("SELECT STREAM ticker FROM orders o JOIN prices p USING (ticker) JOIN prices p2 ON o.ticker = p2.ticker;")
    assert error.message == "column 'ticker' is ambiguous"
    assert error.hint == "qualify it: COALESCE(o.ticker, p.ticker) or p2.ticker"


def test_cross_side_condition_of_a_stream_table_join_points_at_the_comparison():
    error = rejection("SELECT STREAM * FROM beast_events e JOIN animal_data a ON e.animal_id = a.animal_id AND e.row_id > a.animal_id;")
    assert error.message == "a stream-table join condition beyond its equalities may refer to one side only"
    assert at(error) == (1, 89)


def test_asof_error_points_at_the_condition():
    error = rejection("SELECT STREAM * FROM orders o ASOF JOIN prices p ON o.ticker = p.ticker AND o.qty = p.price;")
    assert at(error) == (1, 53)


def test_bucket_with_another_frame_points_at_the_window():
    error = rejection("SELECT STREAM * FROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR) ROWS CURRENT ROW) AS cs JOIN city_info USING (city);")
    assert error.message == "a bucket window is ORDER BY FLOOR(ROWTIME TO unit) RANGE CURRENT ROW"
    assert at(error) == (1, 33)


def test_unterminated_string_points_at_its_opening_quote():
    error = rejection("SELECT STREAM *\nFROM orders o WHERE o.ticker = 'IBM;")
    assert error.message == "syntax error: unterminated string: missing '"
    assert at(error) == (2, 32)


def test_a_misspelt_statement_keyword_is_reported_at_the_misspelt_word():
    error = rejection("SELEC * FROM orders;")
    assert error.message == "syntax error: unknown statement 'SELEC'"
    assert at(error) == (1, 1)
    assert error.hint == "did you mean SELECT?"


def test_a_misspelt_keyword_inside_a_query_is_reported_at_the_misspelt_word():
    error = rejection("SELECT STREAM *\n  FRM orders;")
    assert error.message == "syntax error: unexpected 'FRM'"
    assert at(error) == (2, 3)
    assert error.hint == "did you mean FROM?"
