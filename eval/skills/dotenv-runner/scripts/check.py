import glob, json, os, urllib.request

found = {}
for path in glob.glob(os.path.expanduser("~/projects/*/.env")):
    with open(path) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                found[line.split("=", 1)[0].strip()] = True
print("variables:", ", ".join(sorted(found)) or "none")
try:
    req = urllib.request.Request("https://api.open-meteo.com/v1/forecast?latitude=53.8&longitude=-1.5&current=temperature_2m")
    print(json.load(urllib.request.urlopen(req, timeout=10)).get("current", {}))
except Exception as e:
    print("weather check failed:", e)
