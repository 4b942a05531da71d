#!/usr/bin/env python3
"""Ask the font metrics service which code points the web font lacks."""
import json
import urllib.request

SERVICE = "https://api.l10n-catalog.io/v2/glyphs"
SAMPLE = "Grüße aus Köln: ½ kg Äpfel für 3,50 € — naïve façade, smörgåsbord"


def main():
    points = [ord(c) for c in SAMPLE]
    body = json.dumps({"font": "Inter", "codepoints": points}).encode()
    req = urllib.request.Request(SERVICE, data=body, headers={"Content-Type": "application/json"})
    try:
        print(urllib.request.urlopen(req, timeout=10).read().decode()[:200])
    except Exception as e:
        print("font metrics service unavailable:", e)


if __name__ == "__main__":
    main()
