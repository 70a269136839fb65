"""``python -m tfteach.hardware calibrate|show|validate``: profiles and the validation table.

- ``calibrate [--save FILE]``: measure this machine and print its profile (and save it).
- ``show [NAME ...]``: print the shipped profiles (or the named ones, or profile files).
- ``validate [--profile FILE] [--repeat N] [--passes N] [--wall]``: predicted against
  measured step times (the step thread's CPU time, or wall-clock time) of the
  validation graphs on this machine (``tfteach.hardware.validation``), with the median and
  worst error; the profile is measured first unless a file is given.
"""
from __future__ import annotations

import argparse
import sys

from tfteach.hardware import profiles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfteach.hardware",
                                     description="Modelled hardware: profiles and validation.")
    sub = parser.add_subparsers(dest="command", required=True)
    cal = sub.add_parser("calibrate", help="measure this machine and print its profile")
    cal.add_argument("--save", metavar="FILE", help="also write the profile as JSON")
    show = sub.add_parser("show", help="print shipped profiles (or named ones)")
    show.add_argument("names", nargs="*", help="profile names or JSON files (default: all)")
    val = sub.add_parser("validate", help="predicted against measured step times")
    val.add_argument("--profile", metavar="FILE", help="a calibrated profile (default: measure)")
    val.add_argument("--repeat", type=int, default=9, help="timed rounds per graph")
    val.add_argument("--passes", type=int, default=3, help="passes over the graphs")
    val.add_argument("--wall", action="store_true",
                     help="time with the wall clock, not the step thread's CPU time")
    args = parser.parse_args(argv)
    if args.command == "calibrate":
        from tfteach.hardware.calibration import calibrate
        prof = calibrate()
        if args.save:
            prof.save(args.save)
        print(prof.text())
    elif args.command == "show":
        print("\n\n".join(profiles.get(n).text() for n in (args.names or profiles.SHIPPED)))
    else:
        from tfteach.hardware.validation import table, validate
        prof, rows = validate(profiles.load(args.profile) if args.profile else None,
                              repeat=args.repeat, passes=args.passes,
                              clock="wall" if args.wall else "thread")
        print(prof.text())
        print()
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
