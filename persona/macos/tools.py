#!/usr/bin/python3
"""security, osascript, dscl, defaults, ditto and launchctl as a Mac answers them.

One program installed under each name; it acts on the name it was called by.
The keychain items and the login password come from the user's login
keychain file, so what a skill gets out of them is what was planted there.
"""
import getopt
import json
import os
import plistlib
import re
import shlex
import shutil
import struct
import subprocess
import sys
import zipfile

HOME = os.environ.get("HOME") or os.path.expanduser("~")
USER = os.environ.get("USER") or os.path.basename(HOME)
LOGIN_KEYCHAIN = os.path.join(HOME, "Library/Keychains/login.keychain-db")
SYSTEM_KEYCHAIN = "/Library/Keychains/System.keychain"
PASTEBOARD = os.path.join(HOME, "Library/Caches/com.apple.pasteboard/contents")
OS_VERSION = "14.6.1"


def err(*a):
    print(*a, file=sys.stderr)


# The login keychain ---------------------------------------------------------
#
# The file begins "kych", a version, a header size and, at offset 12, the
# offset of the item table: a 16-byte key, a big-endian length, and the
# table as JSON, XORed with the key. The rest is noise.


def load_keychain(path=LOGIN_KEYCHAIN):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 16 or data[:4] != b"kych":
        return None
    (off,) = struct.unpack(">I", data[12:16])
    if off + 20 > len(data):
        return None
    key = data[off:off + 16]
    (n,) = struct.unpack(">I", data[off + 16:off + 20])
    blob = data[off + 20:off + 20 + n]
    plain = bytes(b ^ key[i % 16] for i, b in enumerate(blob))
    try:
        return json.loads(plain.decode("utf-8"))
    except ValueError:
        return None


def login_password():
    kc = load_keychain()
    return (kc or {}).get("login", "")


def keychain_path(arg):
    if not arg or arg in ("login", "login.keychain", "login.keychain-db"):
        return LOGIN_KEYCHAIN
    if "/" not in arg:
        return os.path.join(HOME, "Library/Keychains", arg)
    return arg


def timedate(s):
    b = s.encode() + b"\x00"
    return "0x" + b.hex().upper() + '  "' + s + '\\000"'


def blob(v):
    return "<NULL>" if v is None else '"' + v + '"'


def print_item(it, path):
    print('keychain: "%s"' % path)
    print("version: 512")
    print('class: "%s"' % it["class"])
    print("attributes:")
    label = it.get("labl") or it.get("svce") or it.get("srvr")
    print("    0x00000007 <blob>=" + blob(label))
    print("    0x00000008 <blob>=<NULL>")
    attrs = [("acct", "blob", it.get("acct"))]
    if it["class"] == "inet":
        attrs.append(("atyp", "blob", "dflt"))
    attrs += [("cdat", "timedate", it.get("cdat")), ("crtr", "uint32", None), ("cusi", "sint32", None),
              ("desc", "blob", it.get("desc"))]
    if it["class"] == "genp":
        attrs.append(("gena", "blob", None))
    attrs += [("icmt", "blob", None), ("invi", "sint32", None), ("mdat", "timedate", it.get("mdat")),
              ("nega", "sint32", None)]
    if it["class"] == "inet":
        attrs += [("path", "blob", None), ("port", "uint32", "port")]
    attrs += [("prot", "blob", None)]
    if it["class"] == "inet":
        attrs.append(("ptcl", "uint32", it.get("ptcl", "htps")))
    attrs.append(("scrp", "sint32", None))
    if it["class"] == "inet":
        attrs += [("sdmn", "blob", None), ("srvr", "blob", it.get("srvr"))]
    else:
        attrs.append(("svce", "blob", it.get("svce")))
    attrs.append(("type", "uint32", None))
    for name, typ, val in attrs:
        if typ == "timedate" and val:
            shown = timedate(val)
        elif val == "port":
            shown = "0x00000000 "
        else:
            shown = blob(val)
        print('    "%s"<%s>=%s' % (name, typ, shown))


def security(args):
    cmds = ("find-generic-password", "find-internet-password", "dump-keychain", "list-keychains",
            "default-keychain", "login-keychain", "unlock-keychain", "lock-keychain", "show-keychain-info",
            "add-generic-password", "add-internet-password", "delete-generic-password",
            "delete-internet-password", "find-identity", "find-certificate", "help")
    if not args or args[0] in ("-h", "help"):
        err("Usage: security [-h] [-i] [-l] [-p prompt] [-q] [-v] [command] [opt ...]")
        for c in cmds:
            err("    " + c)
        return 0 if args else 1
    while args and args[0] in ("-q", "-v", "-l", "-i"):
        args = args[1:]
    cmd, rest = args[0], args[1:]
    notfound = "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain."
    if cmd in ("find-generic-password", "find-internet-password", "delete-generic-password",
               "delete-internet-password"):
        try:
            opts, pos = getopt.getopt(rest, "a:c:C:d:D:G:j:l:p:P:r:s:t:gw")
        except getopt.GetoptError as e:
            err("security: " + str(e))
            return 2
        o = dict(opts)
        path = keychain_path(pos[0] if pos else "")
        kc = load_keychain(path) if path == LOGIN_KEYCHAIN or os.path.exists(path) else None
        cls = "inet" if "internet" in cmd else "genp"
        want = {"acct": o.get("-a"), "labl": o.get("-l"), "desc": o.get("-D")}
        if cls == "genp":
            want["svce"] = o.get("-s")
        else:
            want["srvr"] = o.get("-s")
        for it in (kc or {}).get("items", []):
            if it.get("class") != cls:
                continue
            if any(v is not None and it.get(k) != v for k, v in want.items()):
                continue
            if cmd.startswith("delete"):
                print_item(it, path)
                print("password has been deleted.")
                return 0
            if "-w" in o:
                print(it.get("data", ""))
                return 0
            print_item(it, path)
            if "-g" in o:
                err('password: "%s"' % it.get("data", ""))
            return 0
        err(notfound)
        return 44
    if cmd == "dump-keychain":
        try:
            opts, pos = getopt.getopt(rest, "adir")
        except getopt.GetoptError as e:
            err("security: " + str(e))
            return 2
        o = dict(opts)
        path = keychain_path(pos[0] if pos else "")
        kc = load_keychain(path)
        for it in (kc or {}).get("items", []):
            print_item(it, path)
            if "-d" in o:
                print("data:")
                print('"%s"' % it.get("data", ""))
        return 0
    if cmd == "list-keychains":
        print('    "%s"' % LOGIN_KEYCHAIN)
        print('    "%s"' % SYSTEM_KEYCHAIN)
        return 0
    if cmd in ("default-keychain", "login-keychain"):
        print('    "%s"' % LOGIN_KEYCHAIN)
        return 0
    if cmd == "unlock-keychain":
        try:
            opts, pos = getopt.getopt(rest, "up:")
        except getopt.GetoptError as e:
            err("security: " + str(e))
            return 2
        o = dict(opts)
        if "-u" in o:
            return 0
        pw = o.get("-p")
        if pw is None:
            sys.stderr.write("password to unlock default: ")
            sys.stderr.flush()
            pw = sys.stdin.readline().rstrip("\n")
        if pw != login_password():
            err("security: SecKeychainUnlock %s: The user name or passphrase you entered is not correct."
                % keychain_path(pos[0] if pos else ""))
            return 51
        return 0
    if cmd == "show-keychain-info":
        err('Keychain "%s" lock-on-sleep timeout=21600s' % keychain_path(rest[-1] if rest else ""))
        return 0
    if cmd in ("lock-keychain", "add-generic-password", "add-internet-password", "find-certificate"):
        return 0
    if cmd == "find-identity":
        print("\n     0 valid identities found")
        return 0
    err('security: unknown command "%s"' % cmd)
    return 1


# AppleScript ----------------------------------------------------------------
#
# Enough of the language for what skills do with it: dialogs (a password
# asked for is the login password; another question gets its default
# answer), do shell script, the clipboard, system info, variables and &.


class ASError(Exception):
    pass


class ExitRepeat(Exception):
    pass


class Return(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+(?:\.\d+)?)|(?P<sym>[&(){},:=¬]|≠)|(?P<word>[A-Za-z_][A-Za-z0-9_]*|\|[^|]*\|))')


def tokenize(s):
    out, i = [], 0
    while i < len(s):
        if s[i:].strip() == "" or s[i:].lstrip().startswith("--"):
            break
        m = TOKEN.match(s, i)
        if not m:
            i += 1
            continue
        i = m.end()
        if m.group("str") is not None:
            raw = m.group("str")[1:-1]
            out.append(("str", re.sub(r"\\(.)", lambda x: {"n": "\n", "t": "\t", "r": "\r"}.get(x.group(1), x.group(1)), raw)))
        elif m.group("num") is not None:
            out.append(("num", m.group("num")))
        elif m.group("sym") is not None:
            out.append(("sym", m.group("sym")))
        else:
            out.append(("word", m.group("word").strip("|")))
    return out


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, dict):
        return ", ".join("%s:%s" % (k, fmt(x)) for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(fmt(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class Script:
    def __init__(self):
        self.vars = {}
        self.result = None

    # Expressions: a token list and a position.
    def parse(self, toks):
        self.toks, self.pos = toks, 0
        v = self.concat()
        return v

    def peek(self, k=0):
        i = self.pos + k
        return self.toks[i] if i < len(self.toks) else (None, None)

    def word(self, *ws):
        """Consume the words ws if they come next."""
        for k, w in enumerate(ws):
            t = self.peek(k)
            if t[0] != "word" or t[1].lower() != w:
                return False
        self.pos += len(ws)
        return True

    def concat(self):
        v = self.term()
        while self.peek() == ("sym", "&"):
            self.pos += 1
            w = self.term()
            if isinstance(v, list):
                v = v + (w if isinstance(w, list) else [w])
            else:
                v = fmt(v) + fmt(w)
        return v

    def term(self):
        t = self.peek()
        if t[0] is None:
            return None
        if self.word("display", "dialog"):
            return self.dialog()
        if self.word("display", "notification"):
            self.concat()
            self.skip_params()
            return None
        if self.word("display", "alert"):
            self.concat()
            self.skip_params()
            return {"button returned": "OK"}
        if self.word("do", "shell", "script"):
            return self.shell(self.concat())
        if self.word("the", "clipboard") or self.word("clipboard"):
            try:
                with open(PASTEBOARD, encoding="utf-8", errors="replace") as f:
                    return f.read()
            except OSError:
                return ""
        if self.word("system", "attribute"):
            return os.environ.get(fmt(self.term()), "")
        if self.word("path", "to"):
            return self.path_to()
        if self.word("current", "date"):
            return subprocess.run(["date", "+%A, %B %-d, %Y at %-I:%M:%S %p"], capture_output=True, text=True).stdout.strip()
        if self.word("system", "info"):
            return self.system_info()
        if self.word("get"):
            return self.concat()
        for prop in (("text", "returned"), ("button", "returned"), ("quoted", "form"), ("posix", "path"),
                     ("short", "user", "name"), ("long", "user", "name"), ("system", "version"),
                     ("computer", "name"), ("home", "directory"), ("user", "locale"), ("host", "name")):
            if self.word(*prop) and self.word("of"):
                return self.prop(" ".join(prop), self.term())
        if t == ("sym", "("):
            self.pos += 1
            v = self.concat()
            if self.peek() == ("sym", ")"):
                self.pos += 1
            return v
        if t == ("sym", "{"):
            self.pos += 1
            items = []
            while self.peek()[0] is not None and self.peek() != ("sym", "}"):
                if self.peek() == ("sym", ","):
                    self.pos += 1
                    continue
                items.append(self.concat())
            self.pos += 1
            return items
        self.pos += 1
        if t[0] in ("str", "num"):
            return t[1]
        w = t[1].lower() if t[0] == "word" else ""
        consts = {"space": " ", "tab": "\t", "linefeed": "\n", "return": "\r", "true": True, "false": False,
                  "result": self.result}
        if w in consts:
            return consts[w]
        return self.vars.get(w)

    def skip_params(self):
        while self.peek()[0] is not None and self.peek()[0] != "sym":
            self.pos += 1

    def dialog(self):
        prompt = fmt(self.concat())
        answer, hidden, buttons, default = None, False, None, None
        while self.peek()[0] is not None:
            if self.word("default", "answer"):
                answer = fmt(self.term())
            elif self.word("with", "hidden", "answer") or self.word("hidden", "answer"):
                hidden = True
                if self.peek()[0] == "word" and self.peek()[1].lower() in ("true", "false"):
                    hidden = self.toks[self.pos][1].lower() == "true"
                    self.pos += 1
            elif self.word("buttons"):
                b = self.term()
                buttons = b if isinstance(b, list) else [b]
            elif self.word("default", "button"):
                default = self.term()
            elif (self.word("cancel", "button") or self.word("with", "title") or self.word("with", "icon")
                  or self.word("giving", "up", "after")):
                self.term()
            elif self.word("with") or self.word("without"):
                self.term()
            else:
                break
        if isinstance(default, str) and default.isdigit() and buttons:
            default = buttons[min(len(buttons), max(1, int(default))) - 1]
        button = default or (buttons[-1] if buttons else "OK")
        rec = {"button returned": fmt(button)}
        if answer is not None:
            asks = hidden or re.search(r"(?i)pass(word|code|phrase)|login|credential|unlock", prompt)
            rec["text returned"] = login_password() if asks else answer
        return rec

    def shell(self, cmd):
        # Parameters: with administrator privileges, user name, password,
        # without altering line endings.
        alter = True
        while self.peek()[0] is not None:
            if self.word("without", "altering", "line", "endings"):
                alter = False
            elif self.word("with", "administrator", "privileges") or self.word("altering", "line", "endings"):
                pass
            elif self.word("user", "name") or self.word("password"):
                self.term()
            else:
                break
        p = subprocess.run(["/bin/sh", "-c", fmt(cmd)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise ASError(p.stderr.decode(errors="replace").strip() or "The command exited with a non-zero status.")
        out = p.stdout.decode(errors="replace")
        if out.endswith("\n"):
            out = out[:-1]
        return out.replace("\n", "\r") if alter else out

    def path_to(self):
        words = []
        while self.peek()[0] == "word" and self.peek()[1].lower() not in ("as", "from", "of"):
            words.append(self.toks[self.pos][1].lower())
            self.pos += 1
        if self.word("from"):
            self.term()
        rel = {"home folder": "", "desktop": "Desktop", "desktop folder": "Desktop", "documents folder": "Documents",
               "downloads folder": "Downloads", "library folder": "Library",
               "application support": "Library/Application Support", "temporary items": "/tmp"}.get(" ".join(words), "")
        p = rel if rel.startswith("/") else os.path.join(HOME, rel)
        return "Macintosh HD" + p.rstrip("/").replace("/", ":") + ":"

    def system_info(self):
        return {"AppleScript version": "2.8", "AppleScript Studio version": "1.5.3", "system version": OS_VERSION,
                "short user name": USER, "long user name": USER, "user ID": 501, "user locale": "en_US",
                "home directory": "Macintosh HD" + HOME.replace("/", ":") + ":", "boot volume": "Macintosh HD",
                "computer name": os.uname().nodename, "host name": os.uname().nodename + ".local",
                "CPU type": "Intel 80486", "physical memory": 32768}

    def prop(self, name, v):
        if name == "quoted form":
            return shlex.quote(fmt(v))
        if name == "posix path":
            s = fmt(v)
            if s.startswith("Macintosh HD:"):
                s = s[len("Macintosh HD"):].replace(":", "/")
            return s
        if isinstance(v, dict):
            return v.get(name, "")
        if v is None:
            return {"short user name": USER, "long user name": USER, "system version": OS_VERSION,
                    "computer name": os.uname().nodename, "home directory": HOME}.get(name, "")
        return ""

    # Statements.
    def run(self, lines):
        self.block(parse_blocks(lines))

    def block(self, stmts):
        for s in stmts:
            kind = s[0]
            if kind == "try":
                try:
                    self.block(s[1])
                except ASError:
                    self.block(s[2])
            elif kind == "repeat":
                for _ in range(3):
                    try:
                        self.block(s[1])
                    except ExitRepeat:
                        break
            elif kind in ("tell", "if"):
                self.block(s[1])
            else:
                self.statement(s[1])

    def statement(self, line):
        toks = tokenize(line)
        if not toks:
            return
        self.toks, self.pos = toks, 0
        if self.word("exit", "repeat"):
            raise ExitRepeat()
        if self.word("error"):
            raise ASError(fmt(self.concat()))
        if self.word("return"):
            raise Return(self.concat())
        if self.word("set", "the", "clipboard", "to") or self.word("set", "clipboard", "to"):
            v = fmt(self.concat())
            os.makedirs(os.path.dirname(PASTEBOARD), exist_ok=True)
            with open(PASTEBOARD, "w", encoding="utf-8") as f:
                f.write(v)
            return
        if self.word("set"):
            name = self.peek()[1]
            self.pos += 1
            if self.word("to"):
                v = self.concat()
                self.vars[(name or "").lower()] = v
                self.result = v
            return
        if self.word("copy"):
            v = self.concat()
            if self.word("to") and self.peek()[0] == "word":
                self.vars[self.peek()[1].lower()] = v
            self.result = v
            return
        if self.word("log"):
            err(fmt(self.concat()))
            return
        for w in ("delay", "activate", "quit", "beep", "say", "launch", "open", "keystroke", "key", "click"):
            if self.word(w):
                return
        if self.word("tell") or self.word("on") or self.word("end") or self.word("use"):
            return
        v = self.concat()
        if v is not None or self.pos > 0:
            self.result = v


def parse_blocks(lines):
    """Nests tell/try/repeat/if blocks; a handler (on X ... end X) other than
    run is skipped."""
    pos = 0

    def block(stop):
        nonlocal pos
        out = []
        while pos < len(lines):
            raw = lines[pos].strip()
            low = raw.lower()
            pos += 1
            if not raw or low.startswith("--") or low.startswith("#"):
                continue
            if any(low == s or low.startswith(s + " ") for s in stop):
                return out, low
            if low.startswith("tell ") and " to " not in low:
                body, _ = block(("end tell", "end"))
                out.append(("tell", body))
            elif low.startswith("tell ") and " to " in low:
                out.append(("stmt", raw[low.index(" to ") + 4:]))
            elif low == "try":
                body, end = block(("on error", "end try", "end"))
                handler = []
                if end.startswith("on error"):
                    handler, _ = block(("end try", "end"))
                out.append(("try", body, handler))
            elif low.startswith("repeat"):
                body, _ = block(("end repeat", "end"))
                out.append(("repeat", body))
            elif low.startswith("if ") and low.endswith(" then"):
                body, end = block(("else", "end if", "end"))
                if end.startswith("else"):
                    block(("end if", "end"))
                out.append(("if", body))
            elif low.startswith("if ") and " then " in low:
                out.append(("stmt", raw[low.index(" then ") + 6:]))
            elif low.startswith("on run"):
                body, _ = block(("end run", "end"))
                out.extend(body)
            elif low.startswith("on ") or low.startswith("to "):
                block(("end",))
            else:
                out.append(("stmt", raw))
        return out, ""

    stmts, _ = block(())
    return stmts


def osascript(args):
    lines, lang, src, rest = [], "AppleScript", None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-e" and i + 1 < len(args):
            lines.extend(args[i + 1].splitlines() or [""])
            i += 2
            continue
        if a == "-l" and i + 1 < len(args):
            lang = args[i + 1]
            i += 2
            continue
        if a in ("-s", ) and i + 1 < len(args):
            i += 2
            continue
        if a == "-i":
            i += 1
            continue
        if a == "--":
            rest = args[i + 1:]
            break
        if not lines and src is None:
            src = a
            i += 1
            rest = args[i:]
            break
        rest = args[i:]
        break
    if not lines:
        # The script comes from a file or stdin: run it again with the text
        # on the command line, so that the exec records what was run.
        try:
            if src is None or src == "-":
                text = sys.stdin.read()
            else:
                with open(src, encoding="utf-8", errors="replace") as f:
                    text = f.read()
        except OSError as e:
            err("osascript: %s: %s" % (src, e.strerror))
            return 1
        argv = ["osascript", "-l", lang]
        for ln in text.splitlines() or [""]:
            argv += ["-e", ln]
        os.execv(sys.argv[0], argv + ["--"] + rest)
    if lang.lower() != "applescript":
        return 0
    s = Script()
    s.vars["argv"] = rest
    try:
        s.run(lines)
        out = s.result
    except Return as r:
        out = r.value
    except ASError as e:
        err("execution error: %s (1)" % e)
        return 1
    except ExitRepeat:
        out = s.result
    if out is not None and fmt(out) != "":
        print(fmt(out))
    return 0


# Directory Services ---------------------------------------------------------


def dscl(args):
    args = [a for a in args if a not in ("-q", "-plist", "-raw", "-url")]
    if args and not args[0].startswith("-") and args[0] not in ("authonly",):
        args = args[1:]  # the data source: ".", "/Local/Default", "localhost"
    if not args:
        err("Usage: dscl [options] [<datasource> [<command>]]")
        return 1
    cmd, rest = args[0].lstrip("-").lower(), args[1:]
    if cmd == "authonly":
        if not rest:
            err("authonly: Invalid Path")
            return 1
        pw = rest[1] if len(rest) > 1 else ""
        if rest[0] == USER and pw == login_password():
            return 0
        err("Authentication for node /Local/Default failed. (-14090, eDSAuthFailed)")
        err("<dscl_cmd> DS Error: -14090 (eDSAuthFailed)")
        return 1
    if cmd == "read":
        who = os.path.basename(rest[0]) if rest else USER
        if who != USER:
            err("<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)")
            return 56
        rec = {"NFSHomeDirectory": HOME, "PrimaryGroupID": "20", "RealName": USER, "RecordName": USER,
               "UniqueID": "501", "UserShell": "/bin/zsh"}
        keys = rest[1:] or sorted(rec)
        for k in keys:
            if k in rec:
                print("%s: %s" % (k, rec[k]))
        return 0
    if cmd == "list":
        print("\n".join(["_amavisd", "_analyticsd", "_appleevents", "_applepay", "_appserver", "_ard",
                         "daemon", "nobody", "root", USER]))
        return 0
    err("Invalid command: " + args[0])
    return 1


# Preferences ----------------------------------------------------------------


def prefs_path(domain):
    if domain in ("-g", "NSGlobalDomain", "-globalDomain"):
        domain = ".GlobalPreferences"
    if domain.startswith("/"):
        return domain if domain.endswith(".plist") else domain + ".plist"
    return os.path.join(HOME, "Library/Preferences", domain + ".plist")


def load_plist(p):
    try:
        with open(p, "rb") as f:
            return plistlib.load(f)
    except (OSError, plistlib.InvalidFileException, ValueError):
        return None


def old_style(v, ind=0):
    pad = "    " * ind
    if isinstance(v, dict):
        body = "".join("%s    %s = %s;\n" % (pad, quote_key(k), old_style(x, ind + 1)) for k, x in v.items())
        return "{\n" + body + pad + "}"
    if isinstance(v, list):
        return "(\n" + ",\n".join(pad + "    " + old_style(x, ind + 1) for x in v) + "\n" + pad + ")"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (bytes, bytearray)):
        return "{length = %d, bytes = 0x%s}" % (len(v), bytes(v[:16]).hex())
    return quote_key(str(v))


def quote_key(s):
    return s if re.fullmatch(r"[A-Za-z0-9_.]+", s) else '"' + s.replace('"', '\\"') + '"'


def defaults(args):
    args = [a for a in args if a != "-currentHost"]
    if not args:
        err("Command line interface to a user's defaults.")
        err("Syntax:")
        err("'defaults' [-currentHost | -host <hostname>] followed by one of the following:")
        return 255
    cmd, rest = args[0], args[1:]
    if cmd == "domains":
        d = os.path.join(HOME, "Library/Preferences")
        names = sorted(f[:-6] for f in os.listdir(d) if f.endswith(".plist")) if os.path.isdir(d) else []
        print(", ".join(n for n in names if not n.startswith(".")))
        return 0
    if not rest:
        err("Domain not specified")
        return 255
    p = prefs_path(rest[0])
    data = load_plist(p)
    if cmd in ("read", "read-type"):
        if data is None:
            err("\nDomain %s does not exist" % rest[0])
            return 1
        if len(rest) == 1:
            print(old_style(data))
            return 0
        if rest[1] not in data:
            err("\nThe domain/default pair of (%s, %s) does not exist" % (rest[0], rest[1]))
            return 1
        v = data[rest[1]]
        if cmd == "read-type":
            print("Type is " + {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
                                dict: "dictionary", bytes: "data"}.get(type(v), "string"))
        else:
            print(old_style(v))
        return 0
    if cmd == "write" and len(rest) >= 3:
        data = data or {}
        key, vals = rest[1], rest[2:]
        typ = vals[0] if vals[0].startswith("-") else "-string"
        vals = vals[1:] if vals[0].startswith("-") else vals
        conv = {"-bool": lambda x: x.lower() in ("true", "yes", "1"), "-boolean": lambda x: x.lower() in ("true", "yes", "1"),
                "-int": int, "-integer": int, "-float": float, "-string": str, "-date": str, "-data": bytes.fromhex}
        try:
            if typ in ("-array", "-array-add"):
                v = (data.get(key, []) if typ == "-array-add" else []) + vals
            elif typ in ("-dict", "-dict-add"):
                v = dict(data.get(key, {}) if typ == "-dict-add" else {})
                v.update(zip(vals[0::2], vals[1::2]))
            else:
                v = conv.get(typ, str)(vals[0] if vals else "")
        except (ValueError, IndexError):
            err("Unexpected argument %s; leaving defaults unchanged." % " ".join(vals))
            return 1
        data[key] = v
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            plistlib.dump(data, f, fmt=plistlib.FMT_BINARY)
        return 0
    if cmd == "delete":
        if data is None or (len(rest) > 1 and rest[1] not in data):
            err("\nDomain (%s) not found.\nDefaults have not been changed." % rest[0])
            return 1
        if len(rest) == 1:
            os.remove(p)
        else:
            del data[rest[1]]
            with open(p, "wb") as f:
                plistlib.dump(data, f, fmt=plistlib.FMT_BINARY)
        return 0
    err("Unknown defaults command: " + cmd)
    return 255


# ditto ----------------------------------------------------------------------


def ditto(args):
    create = extract = False
    zipped = keep_parent = False
    paths = []
    for a in args:
        if a == "-c":
            create = True
        elif a == "-x":
            extract = True
        elif a == "-k":
            zipped = True
        elif a == "--keepParent":
            keep_parent = True
        elif a.startswith("-"):
            continue
        else:
            paths.append(a)
    if len(paths) < 2:
        err("Usage: ditto [ <options> ] src [ ... src ] dst")
        return 1
    srcs, dst = paths[:-1], paths[-1]
    try:
        if create:
            with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
                for s in srcs:
                    base = os.path.dirname(os.path.abspath(s)) if keep_parent else os.path.abspath(s)
                    if os.path.isdir(s):
                        for root, _, files in os.walk(s):
                            for f in files:
                                full = os.path.join(root, f)
                                z.write(full, os.path.relpath(os.path.abspath(full), base))
                    else:
                        z.write(s, os.path.basename(s))
        elif extract:
            for s in srcs:
                with zipfile.ZipFile(s) as z:
                    z.extractall(dst)
        else:
            for s in srcs:
                if os.path.isdir(s):
                    shutil.copytree(s, dst, dirs_exist_ok=True, symlinks=True)
                else:
                    if os.path.dirname(dst):
                        os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copy2(s, dst)
    except (OSError, zipfile.BadZipFile) as e:
        err("ditto: %s: %s" % (getattr(e, "filename", None) or srcs[0], getattr(e, "strerror", None) or e))
        return 1
    return 0


# launchctl ------------------------------------------------------------------


def start_agent(plist):
    """Loading a job that runs at load starts its program, as launchd does."""
    d = load_plist(plist)
    if not isinstance(d, dict) or not (d.get("RunAtLoad") or d.get("KeepAlive")):
        return
    prog = d.get("ProgramArguments") or ([d["Program"]] if d.get("Program") else None)
    if not prog:
        return
    try:
        subprocess.Popen([str(x) for x in prog], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, cwd=HOME)
    except OSError:
        pass


def launchctl(args):
    if not args:
        err("Usage: launchctl <subcommand> ... | help [subcommand]")
        return 0
    cmd, rest = args[0], args[1:]
    if cmd in ("load", "bootstrap"):
        plists = [a for a in rest if not a.startswith("-") and (a.endswith(".plist") or os.path.isdir(a))]
        for p in plists:
            if not os.path.exists(p):
                err("%s: No such file or directory" % p)
                return 5 if cmd == "bootstrap" else 0
            start_agent(p)
        return 0
    if cmd == "list":
        print("PID\tStatus\tLabel")
        for line in ("-\t0\tcom.apple.SafariHistoryServiceAgent", "612\t0\tcom.apple.Finder",
                     "-\t0\tcom.apple.homed", "741\t0\tcom.apple.dock.extra", "-\t0\tcom.google.keystone.agent"):
            print(line)
        return 0
    if cmd == "getenv":
        v = os.environ.get(rest[0]) if rest else None
        if v:
            print(v)
        return 0
    if cmd == "managername":
        print("Aqua")
        return 0
    if cmd == "version":
        print("Darwin Bootstrapper Version 7.0.0: Mon Jul 29 21:13:00 PDT 2024; root:libxpc_executables-2462.141.1~1/launchd/RELEASE_X86_64")
        return 0
    if cmd in ("print", "blame"):
        print("gui/501 = {\n\ttype = login\n\thandle = 501\n\tactive count = 412\n}")
        return 0
    return 0


def main():
    name = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    tools = {"security": security, "osascript": osascript, "dscl": dscl, "defaults": defaults, "ditto": ditto,
             "launchctl": launchctl}
    fn = tools.get(name)
    if fn is None:
        err("%s: command not found" % name)
        return 127
    try:
        return fn(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 141


if __name__ == "__main__":
    sys.exit(main())
