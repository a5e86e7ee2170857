"""python3 -m unittest discover -s scripts/bench -p 'test_*.py'"""
import tempfile
import unittest
from pathlib import Path

from report import following_ratios, paired, parse_stages, run_seconds, stages_table

# Two /metrics snapshots as scripts/bench.sh `batch_stages` keeps them around a run; the ledger's
# counters stand still between them.
def snapshot(label, jobs, batches, commit, run, lock):
    return f"""# {label}
db_batch_jobs_sum{{writer="writes"}} {jobs}
db_batch_jobs_count{{writer="writes"}} {batches}
db_batch_seconds_sum{{stage="commit",writer="writes"}} {commit}
db_batch_seconds_count{{stage="commit",writer="writes"}} {batches}
db_batch_seconds_sum{{stage="run",writer="writes"}} {run}
db_batch_seconds_sum{{stage="lock",writer="writes"}} {lock}
db_batch_jobs_sum{{writer="ledger"}} 7
db_batch_jobs_count{{writer="ledger"}} 7
"""


STAGES = snapshot("before", 100, 20, 0.5, 0.25, 0.01) + snapshot("after", 50100, 10020, 3.0, 1.75, 0.11)


def stages_of(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "1__x.stages"
        path.write_text(text)
        return parse_stages(path)


class StagesTest(unittest.TestCase):
    def test_a_run_is_the_growth_of_the_counters_of_the_writers_that_worked(self):
        writers = stages_of(STAGES)
        self.assertEqual(list(writers), ["writes"])  # the ledger ran no batch meanwhile
        w = writers["writes"]
        self.assertEqual((w["batches"], w["jobs"]), (10000, 50000))
        self.assertAlmostEqual(w["commit"], 2.5)
        self.assertAlmostEqual(w["run"], 1.5)
        self.assertAlmostEqual(w["lock"], 0.1)
        rows = stages_table({("writes: POST /notes", "sqlite"): writers}, {("writes: POST /notes", "sqlite"): 5.0})
        # 10,000 writes/s, 5 per batch, 0.01 / 0.15 / 0.25 ms per batch, 80 us per write, 0.80 busy.
        self.assertEqual(rows[-1], "| POST /notes | sqlite | writes | 10,000 | 5.0 | 0.01 / 0.15 / 0.25 | 80 | 0.80 | – |")

    def test_postgres_wal_is_shared_out_by_the_writers_jobs(self):
        writers = stages_of(STAGES.replace("# after", "pg_wal 10 1 1000\n# after") + "pg_wal 100010 5001 40001000\n")
        rows = stages_table({("writes: POST /notes", "postgres"): writers}, {("writes: POST /notes", "postgres"): 5.0})
        self.assertTrue(rows[-1].endswith("| 2.0, 0.10, 800 |"), rows[-1])

    def test_the_run_length_is_read_from_wrk(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "1__sqlite.txt"
            path.write_text("  276771 requests in 5.00s, 60.12MB read\n")
            self.assertEqual(run_seconds(path), 5.0)


def run(rps):
    return {"sqlite": {"rps": rps}}


class PairedTest(unittest.TestCase):
    def test_the_median_round_is_reported_with_every_round(self):
        rows = {
            "a #1": run(9_000), "b #1": run(10_000),    # 0.90
            "a #2": run(6_000), "b #2": run(10_000),    # 0.60
            "a #3": run(8_000), "b #3": run(10_000),    # 0.80
        }
        ratio, ours, base, each = paired(rows, "sqlite", "a", "b")
        self.assertAlmostEqual(ratio, 0.8)
        self.assertEqual((ours["rps"], base["rps"]), (8_000, 10_000))
        self.assertEqual([round(r, 2) for r in each], [0.9, 0.6, 0.8])

    def test_an_even_number_of_rounds_takes_the_lower_middle(self):
        rows = {"a #1": run(9), "b #1": run(10), "a #2": run(7), "b #2": run(10)}
        self.assertAlmostEqual(paired(rows, "sqlite", "a", "b")[0], 0.7)

    def test_plain_names_are_one_round_and_a_missing_pair_none(self):
        rows = {"a": run(9), "b": run(10), "c #1": run(5)}
        self.assertAlmostEqual(paired(rows, "sqlite", "a", "b")[0], 0.9)
        self.assertIsNone(paired(rows, "sqlite", "c", "b"))
        self.assertIsNone(paired(rows, "postgres", "a", "b"))


class FollowingTest(unittest.TestCase):
    def test_each_following_run_is_compared_with_the_run_just_before_it(self):
        rows = {}
        for k, (alone, ten) in enumerate([(8_000, 7_200), (9_000, 6_300), (10_000, 9_500)], start=1):
            rows[f"events: appends, nothing following, before 10 endpoint(s) #{k}"] = run(alone)
            rows[f"events: appends, 10 endpoint(s) #{k}"] = run(ten)
        rows["events: appends, nothing following, before 100 open streams #1"] = run(10_000)
        rows["events: appends, 100 open streams #1"] = run(6_000)
        lines = following_ratios(rows, "sqlite")
        self.assertEqual(len(lines), 2)  # no 1-endpoint rounds
        self.assertIn("**0.90×**", lines[0])  # the median of 0.90, 0.70, 0.95
        self.assertIn("median of 3 rounds: 0.90×, 0.70×, 0.95×", lines[0])
        self.assertIn("meets", lines[0])
        self.assertIn("**0.60×**", lines[1])
        self.assertIn("misses", lines[1])
        self.assertEqual(following_ratios(rows, "postgres"), [])


if __name__ == "__main__":
    unittest.main()
