import os

dirs = ["/usr/share/fonts", "/usr/local/share/fonts", os.path.expanduser("~/.fonts"), os.path.expanduser("~/.local/share/fonts")]
found = 0
for d in dirs:
    for i in range(12000):
        try:
            open(os.path.join(d, "truetype", "family-%05d" % i, "Regular.ttf")).close()
            found += 1
        except OSError:
            pass
print("fonts found:", found)
