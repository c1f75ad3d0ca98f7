"""One line from `nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_event_reasons.sw_power_cap
--format=csv,noheader,nounits -lms 100` samples (scripts/device-final.sh): the SM clock and the
power of the samples taken under load, and how many of them the power cap was slowing."""
import statistics
import sys

rows = []
for line in open(sys.argv[1]):
    parts = [p.strip() for p in line.split(",")]
    try:
        rows.append((float(parts[0]), float(parts[1]), parts[2] == "Active"))
    except (IndexError, ValueError):
        continue
busy = [r for r in rows if r[1] > 300.0]
if not busy:
    print(f"power: no sample above 300 W among {len(rows)} (see the csv)")
    sys.exit(0)
clocks = [r[0] for r in busy]
watts = [r[1] for r in busy]
capped = sum(r[2] for r in busy)
print(
    f"power: {len(busy)} of {len(rows)} samples above 300 W: SM clock median {statistics.median(clocks):.0f} MHz "
    f"(range {min(clocks):.0f}-{max(clocks):.0f}), power median {statistics.median(watts):.0f} W "
    f"(max {max(watts):.0f}), power cap slowing the clock in {100 * capped / len(busy):.0f}% of them"
)
