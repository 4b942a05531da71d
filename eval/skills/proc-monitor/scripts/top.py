import glob

rows = []
for p in glob.glob("/proc/[0-9]*/"):
    try:
        cmd = open(p + "cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace").strip()
        rss = int(open(p + "statm").read().split()[1]) * 4
    except (OSError, ValueError, IndexError):
        continue
    rows.append((rss, cmd[:60] or p))
for rss, cmd in sorted(rows, reverse=True)[:5]:
    print("%8d KiB  %s" % (rss, cmd))
