// Package pyimport maps Python distributions to the top-level modules they
// provide where the two names differ beyond case and separators (pip
// install beautifulsoup4, then import bs4). The jail's registry builds its
// stub wheels with these modules, and the literal driver installs the
// distribution a missing module belongs to.
package pyimport

import (
	"regexp"
	"strings"
)

// table: distribution (as PEP 503 normalises it) -> modules. Namespace
// packages (google.*, azure.*) are left out: a stub cannot stand in for
// part of a namespace.
var table = map[string][]string{
	"beautifulsoup4":         {"bs4"},
	"pillow":                 {"PIL"},
	"opencv-python":          {"cv2"},
	"opencv-python-headless": {"cv2"},
	"opencv-contrib-python":  {"cv2"},
	"scikit-learn":           {"sklearn"},
	"scikit-image":           {"skimage"},
	"python-dateutil":        {"dateutil"},
	"python-dotenv":          {"dotenv"},
	"pyyaml":                 {"yaml"},
	"pyjwt":                  {"jwt"},
	"pycryptodome":           {"Crypto"},
	"pycryptodomex":          {"Cryptodome"},
	"python-docx":            {"docx"},
	"python-pptx":            {"pptx"},
	"python-magic":           {"magic"},
	"pyserial":               {"serial"},
	"pymupdf":                {"fitz", "pymupdf"},
	"gitpython":              {"git"},
	"python-telegram-bot":    {"telegram"},
	"discord-py":             {"discord"},
	"pynacl":                 {"nacl"},
	"pyopenssl":              {"OpenSSL"},
	"attrs":                  {"attr", "attrs"},
	"pyusb":                  {"usb"},
	"python-levenshtein":     {"Levenshtein"},
	"pypdf2":                 {"PyPDF2"},
	"pdfminer-six":           {"pdfminer"},
	"psycopg2-binary":        {"psycopg2"},
	"pyzmq":                  {"zmq"},
	"python-jose":            {"jose"},
	"websocket-client":       {"websocket"},
	"markdown-it-py":         {"markdown_it"},
	"py-cpuinfo":             {"cpuinfo"},
	"faiss-cpu":              {"faiss"},
	"python-multipart":       {"multipart"},
	"python-slugify":         {"slugify"},
	"pyside6":                {"PySide6"},
	"pyqt5":                  {"PyQt5"},
	"pygithub":               {"github"},
	"python-gitlab":          {"gitlab"},
	"mysqlclient":            {"MySQLdb"},
	"ipython":                {"IPython"},
	"pyinstaller":            {"PyInstaller"},
}

var modules = func() map[string]string {
	m := map[string]string{}
	for dist, mods := range table {
		for _, mod := range mods {
			if _, dup := m[mod]; !dup || len(dist) < len(m[mod]) {
				m[mod] = dist // cv2: opencv-python, the shortest name
			}
		}
	}
	return m
}()

var sep = regexp.MustCompile(`[-_.]+`)

// Normalize is a distribution name as PEP 503 compares them.
func Normalize(dist string) string { return strings.ToLower(sep.ReplaceAllString(dist, "-")) }

// Modules returns the top-level modules dist provides besides the one its
// own name gives (nil when that is all).
func Modules(dist string) []string { return table[Normalize(dist)] }

// Dist returns the distribution to install for a top-level module: the
// table's, else the module's own name.
func Dist(module string) string {
	top, _, _ := strings.Cut(module, ".")
	if d, ok := modules[top]; ok {
		return d
	}
	return top
}
