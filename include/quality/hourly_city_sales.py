"""The hourly city sales enrichment output, one hour H (`include/apps/hourly_city_sales`).

The RIGHT OUTER JOIN promises exactly one row per city of the city table per hour, so:

- row_count: the hour has as many rows as the snapshot of the city table it was joined with
  (`expected_rows`, from the hour's completeness marker);
- key_not_null, key_unique: the key (`city`) is never NULL and unique within the hour;
- hour: every row's hour column (`sales_hour`) is set and lies in [H, H + 1 hour);
- attribute_not_null: the table's attributes (`region`, `store_name`) are never NULL;
- measure_non_negative: the measures (`total_sales`, `sales`) are NULL or >= 0;
- null_measure_share: at most `max_null_measure_share` of the rows have a NULL measure (a city
  without sales is normal; a flood of them means an input stalled);
- key_set (when the snapshot's rows are known): the hour's keys are exactly the snapshot's: no key
  the snapshot lacks (each offending row named), none of its keys missing (each named);
- attribute_matches_snapshot (likewise): each row's attributes are the snapshot's for its key;
- input_volume (when earlier hours are complete): the hour's input (`volume_measure`, summed) is
  at least `min_volume_share` of the median of the `volume_trailing_hours` before it (`trailing`):
  an hour whose input mostly went late or missing is not VALIDATED;
- silent_share (when earlier hours are complete): the share of cities without sales (the volume
  measure NULL) is at most the trailing hours' median share plus `max_silent_share_rise`;
- late_share (when `late_input` is set and the hour has late rows): at most `max_late_share` of the hour's input came late
  (`late`: the rows of the hour in the input's late-rows output; the hour's on-time input is the
  volume measure's sum, so the check is "that sum is at least late x (1 - share) / share").

Column roles and thresholds come from the `[quality]` section of the app's `app.toml`. Each
expectation's `meta["check"]` names which of these checks it belongs to.
"""

from __future__ import annotations

import datetime as dt
import statistics

import great_expectations as gx
import great_expectations.expectations as gxe


def build_suite(context, config: dict, expected_rows: int, hour: str, reference=None,
                trailing: list[float] | None = None, late: int | None = None,
                silent: list[float] | None = None) -> gx.ExpectationSuite:
    """Add the suite for hour `hour` (`YYYY-MM-DDTHH`) to `context` and return it. `reference`: the
    rows (a pyarrow Table) of the snapshot the hour was joined with, or None when they are unknown.
    The snapshot's columns are named as the output's unless `[quality] snapshot_columns` maps them."""
    quality = config["quality"]
    key, hour_column = quality["key"], quality["hour_column"]
    bound = float(quality["max_null_measure_share"])
    if not 0 <= bound <= 1:
        raise ValueError(f"[quality] max_null_measure_share must be between 0 and 1, not {bound}")
    start = dt.datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=dt.UTC)
    expectations = [
        gxe.ExpectTableRowCountToEqual(value=expected_rows, meta={"check": "row_count"}),
        gxe.ExpectColumnValuesToNotBeNull(column=key, meta={"check": "key_not_null"}),
        gxe.ExpectColumnValuesToBeUnique(column=key, meta={"check": "key_unique"}),
        gxe.ExpectColumnValuesToNotBeNull(column=hour_column, meta={"check": "hour"}),
        gxe.ExpectColumnValuesToBeBetween(column=hour_column, min_value=start, max_value=start + dt.timedelta(hours=1),
                                          strict_max=True, meta={"check": "hour"}),
    ]
    expectations += [gxe.ExpectColumnValuesToNotBeNull(column=c, meta={"check": "attribute_not_null"})
                     for c in quality["attributes"]]
    # NULL measures are skipped by the range check: a silent city is not a negative one
    expectations += [gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, meta={"check": "measure_non_negative"})
                     for c in quality["measures"]]
    expectations += [gxe.ExpectColumnValuesToNotBeNull(column=c, mostly=round(1 - bound, 6), meta={"check": "null_measure_share"})
                     for c in quality["measures"]]
    if reference is not None:
        expectations += snapshot_expectations(quality, reference)
    if trailing and quality.get("volume_measure"):
        share = float(quality.get("min_volume_share", 0.5))
        usual = statistics.median(trailing)
        expectations.append(gxe.ExpectColumnSumToBeBetween(
            column=quality["volume_measure"], min_value=round(share * usual, 6),
            meta={"check": "input_volume", "trailing_hours": len(trailing), "trailing_median": usual}))
    if silent and quality.get("volume_measure"):  # silent cities against the hours before: usual share + the rise allowed
        usual = statistics.median(silent)
        rise = float(quality.get("max_silent_share_rise", 0.2))
        allowed = min(1.0, usual + rise)
        expectations.append(gxe.ExpectColumnValuesToNotBeNull(
            column=quality["volume_measure"], mostly=round(1 - allowed, 6),
            meta={"check": "silent_share", "trailing_hours": len(silent), "trailing_median": usual, "max_rise": rise}))
    if late and quality.get("volume_measure"):  # an hour without late rows meets it whatever its input
        share = float(quality.get("max_late_share", 0.2))
        if not 0 < share <= 1:
            raise ValueError(f"[quality] max_late_share must be in (0, 1], not {share}")
        expectations.append(gxe.ExpectColumnSumToBeBetween(
            column=quality["volume_measure"], min_value=round(late * (1 - share) / share, 6),
            meta={"check": "late_share", "late_rows": late, "max_late_share": share}))
    suite = gx.ExpectationSuite(name=config["name"], expectations=expectations,
                                meta={"dataset": config["name"], "hour": hour})
    return context.suites.add(suite)


def snapshot_expectations(quality: dict, reference) -> list:
    """The hour holds exactly the snapshot's keys, each with the snapshot's attributes."""
    key, renamed = quality["key"], quality.get("snapshot_columns", {})
    column = lambda name: reference.column(renamed.get(name, name)).to_pylist()  # noqa: E731
    keys = column(key)
    expectations = [
        gxe.ExpectColumnValuesToBeInSet(column=key, value_set=sorted(set(keys)), meta={"check": "key_set"}),
        gxe.ExpectColumnDistinctValuesToContainSet(column=key, value_set=sorted(set(keys)), meta={"check": "key_set"}),
    ]
    for attribute in quality["attributes"]:
        pairs = sorted(set(zip(keys, column(attribute), strict=True)), key=repr)
        expectations.append(gxe.ExpectColumnPairValuesToBeInSet(
            column_A=key, column_B=attribute, value_pairs_set=pairs, meta={"check": "attribute_matches_snapshot"}))
    return expectations
