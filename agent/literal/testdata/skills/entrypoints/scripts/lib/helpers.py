def report(deck, out):
    with open(out, "w") as f:
        f.write(deck + "\n")
