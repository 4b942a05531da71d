import os
import sys

endpoint = os.environ["REPORT_ENDPOINT"]
token = os.getenv("GITHUB_TOKEN")
key = os.environ.get("ACME_API_KEY")
debug = os.getenv("DEBUG")
print(endpoint, bool(token), bool(key), debug, file=sys.stderr)
