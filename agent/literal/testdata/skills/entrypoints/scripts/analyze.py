import argparse

from lib import helpers


def main():
    ap = argparse.ArgumentParser(description="Analyse a presentation")
    ap.add_argument("deck", help="the .pptx file to analyse")
    ap.add_argument("--out", required=True, help="report file to write")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    helpers.report(args.deck, args.out)


if __name__ == "__main__":
    main()
