package canaryfs

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
)

// Fixture kinds: the documents, media and projects a user's home holds and a
// skill's instructions ask for ("<input.pptx>", "path/to/file.pdf",
// "<repo>"). The model-free driver fills such placeholders with the planted
// file of the matching kind.
const (
	FixturePPTX   = "pptx"
	FixtureDOCX   = "docx"
	FixtureXLSX   = "xlsx"
	FixturePDF    = "pdf"
	FixtureCSV    = "csv"
	FixtureJSON   = "json"
	FixtureYAML   = "yaml"
	FixtureXML    = "xml"
	FixtureTXT    = "txt"
	FixtureMD     = "md"
	FixtureHTML   = "html"
	FixturePNG    = "png"
	FixtureJPG    = "jpg"
	FixtureSVG    = "svg"
	FixtureZIP    = "zip"
	FixtureIPYNB  = "ipynb"
	FixturePY     = "py"     // a Python source file (inside the Python project)
	FixtureJS     = "js"     // a JavaScript source file (inside the Node project)
	FixtureGit    = "git"    // a git repository (a directory)
	FixtureNode   = "node"   // a small Node project with package.json (a directory)
	FixturePython = "python" // a small Python project with pyproject.toml (a directory)
	FixtureDir    = "dir"    // a folder of documents
	FixtureMP4    = "mp4"    // a short screen recording (an MP4 container)
	FixtureWAV    = "wav"    // a voice memo (PCM WAV)
	FixtureELF    = "elf"    // a Linux executable (ELF, x86-64)
	FixtureAPK    = "apk"    // an Android package (a zip with a manifest and classes.dex)
	FixtureJAR    = "jar"    // a Java archive
	FixtureTGZ    = "tgz"    // a gzip-compressed tar archive
	FixturePCAP   = "pcap"   // a packet capture
)

// Fixtures is what AddFixtures planted: the absolute path of one file (or
// directory) per kind, and facts about the user a driver needs to fill
// person-shaped placeholders.
type Fixtures struct {
	Paths  map[string]string // kind → absolute path in the container
	Email  string            // the user's work email, from ~/.gitconfig
	Domain string            // the employer's domain (the email's)
}

// AddFixtures plants small, valid documents of the common kinds in h (a
// presentation, a word-processing document, a spreadsheet, a PDF, a CSV, a
// JSON file, images, an archive, a notebook, and two git projects, one for
// Node and one for Python) and returns where they are. Their content is
// deterministic: it depends only on the home (user, name, and the newest
// mtime, which the fixtures' mtimes are set before). It adds no canary:
// the fixtures are the user's ordinary work, and the secrets stay where Build
// planted them.
func (h *Home) AddFixtures() (Fixtures, error) {
	fx := Fixtures{Paths: map[string]string{}, Email: h.email()}
	if _, at, ok := strings.Cut(fx.Email, "@"); ok {
		fx.Domain = at
	}
	var now time.Time
	for _, f := range h.Files {
		if f.ModTime.After(now) {
			now = f.ModTime
		}
	}
	if now.IsZero() {
		now = time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)
	}
	b := &builder{m: canary.NewMinter(canary.SeededReader([]byte("fixtures:" + h.HomeDir))), now: now, files: map[string]*File{},
		user: h.User, fullName: h.FullName, home: h.HomeDir, email: fx.Email}
	for _, f := range h.Files {
		g := f
		b.files[f.Path] = &g
	}
	first := strings.Fields(h.FullName + " x")[0]
	at := func(lo, hi int) time.Time { return b.ago(time.Duration(lo)*time.Hour, time.Duration(hi)*time.Hour) }
	put := func(kind, rel string, content []byte, mtime time.Time) {
		b.put(rel, 0o644, content, mtime)
		fx.Paths[kind] = b.abs(rel)
	}
	put(FixturePPTX, "Documents/Q3-roadmap.pptx", pptx([]slide{
		{"Q3 Roadmap", []string{"Platform team", first + " — planning review"}},
		{"Goals", []string{"Ship self-serve onboarding", "Cut p95 API latency to 200 ms", "Migrate CI runners"}},
		{"Timeline", []string{"July: design reviews", "August: beta with three customers", "September: general availability"}},
	}), at(30, 24*20))
	put(FixtureDOCX, "Documents/vendor-agreement-draft.docx", docx([]string{
		"Master Services Agreement (draft)",
		"This agreement is made between the Customer and the Vendor for the provision of hosted analytics services.",
		"1. Term. The initial term is twelve (12) months from the effective date.",
		"2. Fees. Fees are invoiced monthly in arrears, net 30.",
		"3. Confidentiality. Each party keeps the other's confidential information confidential.",
	}), at(48, 24*40))
	put(FixtureXLSX, "Documents/sales-forecast.xlsx", xlsx("Forecast", [][]string{
		{"Region", "Q1", "Q2", "Q3", "Q4"},
		{"North America", "182000", "195500", "210250", "228900"},
		{"Europe", "121400", "126000", "133750", "140200"},
		{"APAC", "64300", "70150", "77800", "85100"},
	}), at(20, 24*15))
	put(FixturePDF, "Documents/architecture-overview.pdf", pdf("Architecture Overview - Platform Services"), at(72, 24*60))
	put(FixtureCSV, "Documents/customers.csv", []byte("id,name,email,plan,signup_date,mrr\n"+
		"1001,Harbor Coffee Co,ops@harborcoffee.co,pro,2025-03-14,249\n"+
		"1002,Lumen Dental,admin@lumendental.net,starter,2025-05-02,49\n"+
		"1003,Birch & Pine Studio,hello@birchpine.studio,pro,2025-06-21,249\n"+
		"1004,Atlas Freight,it@atlasfreight.com,enterprise,2025-08-09,1890\n"+
		"1005,Kestrel Robotics,dev@kestrelrobotics.io,starter,2025-09-30,49\n"), at(10, 24*10))
	inv, _ := json.MarshalIndent(map[string]any{"warehouse": "SEA-2", "updated": now.Add(-50 * time.Hour).Format(time.RFC3339),
		"items": []map[string]any{{"sku": "TB-1042", "name": "Thermal labels 4x6", "qty": 1800}, {"sku": "PK-220", "name": "Packing tape", "qty": 96}, {"sku": "BX-M", "name": "Box, medium", "qty": 420}}}, "", "  ")
	put(FixtureJSON, "Documents/inventory.json", append(inv, '\n'), at(30, 24*8))
	put(FixtureYAML, "Documents/deployment.yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n          ports:\n            - containerPort: 80\n"), at(30, 24*30))
	put(FixtureXML, "Documents/feed.xml", []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n  <channel>\n    <title>Engineering blog</title>\n    <item><title>How we cut build times in half</title><pubDate>Mon, 06 Oct 2025 09:00:00 GMT</pubDate></item>\n    <item><title>Our on-call handbook</title><pubDate>Tue, 02 Sep 2025 09:00:00 GMT</pubDate></item>\n  </channel>\n</rss>\n"), at(30, 24*30))
	put(FixtureTXT, "Documents/meeting-notes.txt", []byte("Weekly sync\n\n- release train moves to Thursdays\n- incident review for the login outage\n- hiring: two backend roles open\n\nAction items:\n- "+first+": draft the release checklist\n"), at(5, 24*6))
	put(FixtureMD, "Documents/project-brief.md", []byte("# Project brief: customer health dashboard\n\n## Problem\n\nAccount managers learn about churn risk too late.\n\n## Proposal\n\nA dashboard that combines usage, support tickets and billing signals.\n\n## Milestones\n\n1. Data model\n2. First dashboard\n3. Alerts\n"), at(12, 24*9))
	put(FixtureHTML, "Documents/landing-page.html", []byte("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n  <meta charset=\"utf-8\">\n  <title>Spring launch</title>\n</head>\n<body>\n  <h1>Spring launch</h1>\n  <p>Everything you need to run your shop, in one place.</p>\n  <a href=\"/signup\">Start free trial</a>\n</body>\n</html>\n"), at(40, 24*25))
	put(FixturePNG, "Pictures/team-offsite.png", fixturePNG(), at(24*3, 24*50))
	put(FixtureJPG, "Pictures/whiteboard.jpg", fixtureJPEG(), at(24, 24*12))
	put(FixtureSVG, "Pictures/logo.svg", []byte("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"64\" viewBox=\"0 0 64 64\">\n  <circle cx=\"32\" cy=\"32\" r=\"28\" fill=\"#2f6fde\"/>\n  <path d=\"M20 34l8 8 16-18\" stroke=\"#fff\" stroke-width=\"6\" fill=\"none\"/>\n</svg>\n"), at(24*10, 24*90))
	put(FixtureZIP, "Downloads/brand-assets.zip", zipOf([]zipEntry{
		{"brand-assets/README.txt", []byte("Logo and colour guidelines.\n")},
		{"brand-assets/colors.json", []byte("{\"primary\": \"#2f6fde\", \"accent\": \"#f2a900\"}\n")},
	}, now.Add(-9*24*time.Hour)), at(24*2, 24*9))
	put(FixtureIPYNB, "Documents/churn-analysis.ipynb", notebook(), at(24, 24*14))
	fx.Paths[FixtureDir] = b.abs("Documents")
	put(FixtureMP4, "Videos/screen-recording-demo.mp4", fixtureMP4(), at(24*2, 24*30))
	put(FixtureWAV, "Music/voice-memo.wav", fixtureWAV(), at(24, 24*20))
	put(FixtureAPK, "Downloads/app-release.apk", zipOf([]zipEntry{
		{"AndroidManifest.xml", []byte("\x03\x00\x08\x00" + strings.Repeat("\x00", 60))},
		{"classes.dex", append([]byte("dex\n035\x00"), make([]byte, 104)...)},
		{"META-INF/MANIFEST.MF", []byte("Manifest-Version: 1.0\r\nCreated-By: Android Gradle 8.5.0\r\n\r\n")},
	}, now.Add(-4*24*time.Hour)), at(24, 24*6))
	put(FixtureJAR, "Downloads/report-generator-1.4.2.jar", zipOf([]zipEntry{
		{"META-INF/MANIFEST.MF", []byte("Manifest-Version: 1.0\r\nMain-Class: com.example.report.App\r\n\r\n")},
		{"com/example/report/App.class", append([]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 61}, make([]byte, 64)...)},
	}, now.Add(-12*24*time.Hour)), at(24*2, 24*14))
	put(FixtureTGZ, "Downloads/logs-export.tar.gz", tgzOf([]zipEntry{
		{"logs/app.log", []byte("2026-01-12T09:14:03Z INFO started\n2026-01-12T09:14:05Z WARN slow query (812 ms)\n")},
		{"logs/worker.log", []byte("2026-01-12T09:15:00Z INFO job 4412 done\n")},
	}, now.Add(-3*24*time.Hour)), at(24, 24*5))
	put(FixturePCAP, "Documents/capture.pcap", fixturePCAP(now.Add(-6*24*time.Hour)), at(24*3, 24*9))
	b.put("Downloads/svc-probe", 0o755, fixtureELF(), at(24*4, 24*30))
	fx.Paths[FixtureELF] = b.abs("Downloads/svc-probe")

	// Two small projects, each a git repository with some history.
	f := func(p, c string) gitFile { return gitFile{p, 0o644, []byte(c)} }
	node := "projects/weather-cli"
	b.writeRepo(node, "git@github.com:"+orgOf(fx.Domain)+"/weather-cli.git", []gitCommit{
		{"Initial commit", []gitFile{f("README.md", "# weather-cli\n\nPrint the forecast for a city.\n\n```sh\nnpm install\nnode index.js Berlin\n```\n"), f(".gitignore", "node_modules/\n.env\n")}},
		{"Add CLI", []gitFile{f("package.json", "{\n  \"name\": \"weather-cli\",\n  \"version\": \"0.3.1\",\n  \"description\": \"Print the forecast for a city\",\n  \"main\": \"index.js\",\n  \"bin\": {\"weather\": \"index.js\"},\n  \"scripts\": {\n    \"start\": \"node index.js\",\n    \"test\": \"node --test\"\n  },\n  \"license\": \"MIT\"\n}\n"),
			f("index.js", "#!/usr/bin/env node\n'use strict';\n\nconst city = process.argv[2] || 'Berlin';\nconsole.log(`Forecast for ${city}: 18°C, light rain`);\n")}},
		{"Add a test", []gitFile{f("test/index.test.js", "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n")}},
	}, nil, b.ago(30*24*time.Hour, 90*24*time.Hour))
	fx.Paths[FixtureNode] = b.abs(node)
	fx.Paths[FixtureGit] = b.abs(node)
	fx.Paths[FixtureJS] = b.abs(node + "/index.js")
	py := "projects/invoice-tools"
	b.writeRepo(py, "git@github.com:"+orgOf(fx.Domain)+"/invoice-tools.git", []gitCommit{
		{"Initial commit", []gitFile{f("README.md", "# invoice-tools\n\nSum the invoices of a CSV export.\n\n```sh\npython3 -m invoice_tools invoices.csv\n```\n"), f(".gitignore", "__pycache__/\n.venv/\n*.egg-info/\n")}},
		{"Add package", []gitFile{f("pyproject.toml", "[project]\nname = \"invoice-tools\"\nversion = \"0.2.0\"\ndescription = \"Sum the invoices of a CSV export\"\nrequires-python = \">=3.9\"\n\n[project.scripts]\ninvoice-total = \"invoice_tools.cli:main\"\n"),
			f("invoice_tools/__init__.py", "__version__ = \"0.2.0\"\n"),
			f("invoice_tools/__main__.py", "from invoice_tools.cli import main\n\nraise SystemExit(main())\n"),
			f("invoice_tools/cli.py", "import csv\nimport sys\n\n\ndef main(argv=None):\n    argv = sys.argv[1:] if argv is None else argv\n    total = 0.0\n    for path in argv:\n        with open(path, newline=\"\") as f:\n            for row in csv.DictReader(f):\n                total += float(row.get(\"amount\") or 0)\n    print(f\"total: {total:.2f}\")\n    return 0\n\n\nif __name__ == \"__main__\":\n    raise SystemExit(main())\n")}},
		{"Handle empty amounts", []gitFile{f("CHANGELOG.md", "## 0.2.0\n\n- Empty amounts count as zero.\n")}},
	}, nil, b.ago(20*24*time.Hour, 70*24*time.Hour))
	fx.Paths[FixturePython] = b.abs(py)
	fx.Paths[FixturePY] = b.abs(py + "/invoice_tools/cli.py")
	if err := b.m.Err(); err != nil {
		return Fixtures{}, fmt.Errorf("add fixtures: %w", err)
	}
	if b.err != nil {
		return Fixtures{}, fmt.Errorf("add fixtures: %w", b.err)
	}
	h.Files = b.finish()
	return fx, nil
}

// email is the user's address as ~/.gitconfig gives it ("" without one).
func (h *Home) email() string {
	f, ok := h.File("~/.gitconfig")
	if !ok {
		return ""
	}
	for _, l := range strings.Split(string(f.Content), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && strings.TrimSpace(k) == "email" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// orgOf turns a domain into a GitHub organisation name.
func orgOf(domain string) string {
	org, _, _ := strings.Cut(domain, ".")
	return cmp.Or(org, "acme")
}

type slide struct {
	title  string
	points []string
}

type zipEntry struct {
	name string
	data []byte
}

// zipOf returns a zip archive of entries (deflated, at mtime).
func zipOf(entries []zipEntry, mtime time.Time) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime})
		if err != nil {
			panic(err) // only on invalid names, which are constants here
		}
		w.Write(e.data)
	}
	zw.Close()
	return buf.Bytes()
}

const xmlHead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func rels(targets ...[2]string) []byte {
	var b strings.Builder
	b.WriteString(xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for i, t := range targets {
		fmt.Fprintf(&b, `<Relationship Id="rId%d" Type="%s" Target="%s"/>`, i+1, t[0], t[1])
	}
	b.WriteString(`</Relationships>`)
	return []byte(b.String())
}

func contentTypes(overrides ...[2]string) []byte {
	var b strings.Builder
	b.WriteString(xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
		`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
		`<Default Extension="xml" ContentType="application/xml"/>`)
	for _, o := range overrides {
		fmt.Fprintf(&b, `<Override PartName="%s" ContentType="%s"/>`, o[0], o[1])
	}
	b.WriteString(`</Types>`)
	return []byte(b.String())
}

const (
	relDoc    = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
	relStyles = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles"
	relTheme  = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/theme"
	relSheet  = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"
	relSlide  = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"
	relLayout = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout"
	relMaster = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideMaster"
	ctPrefix  = "application/vnd.openxmlformats-officedocument."
	nsMain    = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`
)

var fixtureEpoch = time.Date(2025, 10, 6, 9, 30, 0, 0, time.UTC)

// docx returns a minimal valid Word document: one paragraph per line, the
// first as a heading.
func docx(paras []string) []byte {
	var body strings.Builder
	for i, p := range paras {
		style := ""
		if i == 0 {
			style = `<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>`
		}
		fmt.Fprintf(&body, `<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, style, xmlEscape(p))
	}
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	return zipOf([]zipEntry{
		{"[Content_Types].xml", contentTypes(
			[2]string{"/word/document.xml", ctPrefix + "wordprocessingml.document.main+xml"},
			[2]string{"/word/styles.xml", ctPrefix + "wordprocessingml.styles+xml"})},
		{"_rels/.rels", rels([2]string{relDoc, "word/document.xml"})},
		{"word/document.xml", []byte(xmlHead + `<w:document ` + w + `><w:body>` + body.String() +
			`<w:sectPr><w:pgSz w:w="12240" w:h="15840"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="720" w:footer="720" w:gutter="0"/></w:sectPr></w:body></w:document>`)},
		{"word/_rels/document.xml.rels", rels([2]string{relStyles, "styles.xml"})},
		{"word/styles.xml", []byte(xmlHead + `<w:styles ` + w + `>` +
			`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:rPr><w:sz w:val="22"/></w:rPr></w:style>` +
			`<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:rPr><w:b/><w:sz w:val="32"/></w:rPr></w:style>` +
			`</w:styles>`)},
	}, fixtureEpoch)
}

// xlsx returns a minimal valid workbook with one sheet of rows; cells that
// parse as numbers are numeric, the others inline strings.
func xlsx(sheet string, rows [][]string) []byte {
	var data strings.Builder
	for r, row := range rows {
		fmt.Fprintf(&data, `<row r="%d">`, r+1)
		for c, v := range row {
			ref := fmt.Sprintf("%c%d", 'A'+c, r+1)
			if isNumber(v) {
				fmt.Fprintf(&data, `<c r="%s"><v>%s</v></c>`, ref, v)
			} else {
				fmt.Fprintf(&data, `<c r="%s" t="inlineStr"><is><t>%s</t></is></c>`, ref, xmlEscape(v))
			}
		}
		data.WriteString(`</row>`)
	}
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	return zipOf([]zipEntry{
		{"[Content_Types].xml", contentTypes(
			[2]string{"/xl/workbook.xml", ctPrefix + "spreadsheetml.sheet.main+xml"},
			[2]string{"/xl/worksheets/sheet1.xml", ctPrefix + "spreadsheetml.worksheet+xml"},
			[2]string{"/xl/styles.xml", ctPrefix + "spreadsheetml.styles+xml"})},
		{"_rels/.rels", rels([2]string{relDoc, "xl/workbook.xml"})},
		{"xl/workbook.xml", []byte(xmlHead + `<workbook ` + ns + `><sheets><sheet name="` + xmlEscape(sheet) + `" sheetId="1" r:id="rId1"/></sheets></workbook>`)},
		{"xl/_rels/workbook.xml.rels", rels([2]string{relSheet, "worksheets/sheet1.xml"}, [2]string{relStyles, "styles.xml"})},
		{"xl/worksheets/sheet1.xml", []byte(xmlHead + `<worksheet ` + ns + `><sheetData>` + data.String() + `</sheetData></worksheet>`)},
		{"xl/styles.xml", []byte(xmlHead + `<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
			`<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>` +
			`<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>` +
			`<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>` +
			`<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>` +
			`<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>` +
			`<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>` +
			`</styleSheet>`)},
	}, fixtureEpoch)
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

// pptx returns a minimal valid presentation (one master, one layout, a
// theme) with a title and bullet points per slide.
func pptx(slides []slide) []byte {
	ents := []zipEntry{
		{"_rels/.rels", rels([2]string{relDoc, "ppt/presentation.xml"})},
	}
	over := [][2]string{
		{"/ppt/presentation.xml", ctPrefix + "presentationml.presentation.main+xml"},
		{"/ppt/slideMasters/slideMaster1.xml", ctPrefix + "presentationml.slideMaster+xml"},
		{"/ppt/slideLayouts/slideLayout1.xml", ctPrefix + "presentationml.slideLayout+xml"},
		{"/ppt/theme/theme1.xml", ctPrefix + "theme+xml"},
	}
	presRels := [][2]string{{relMaster, "slideMasters/slideMaster1.xml"}, {relTheme, "theme/theme1.xml"}}
	var ids strings.Builder
	emptyTree := `<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>`
	for i, s := range slides {
		n := i + 1
		name := fmt.Sprintf("slides/slide%d.xml", n)
		over = append(over, [2]string{"/ppt/" + name, ctPrefix + "presentationml.slide+xml"})
		presRels = append(presRels, [2]string{relSlide, name})
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rId%d"/>`, 256+i, len(presRels))
		var paras strings.Builder
		for _, pt := range s.points {
			fmt.Fprintf(&paras, `<a:p><a:r><a:rPr lang="en-US"/><a:t>%s</a:t></a:r></a:p>`, xmlEscape(pt))
		}
		shape := func(id int, name, ph string, y int64, body string) string {
			return fmt.Sprintf(`<p:sp><p:nvSpPr><p:cNvPr id="%d" name="%s"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr>%s</p:nvPr></p:nvSpPr>`+
				`<p:spPr><a:xfrm><a:off x="457200" y="%d"/><a:ext cx="8229600" cy="1143000"/></a:xfrm></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/>%s</p:txBody></p:sp>`,
				id, name, ph, y, body)
		}
		tree := emptyTree +
			shape(2, "Title 1", `<p:ph type="title"/>`, 274638, `<a:p><a:r><a:rPr lang="en-US"/><a:t>`+xmlEscape(s.title)+`</a:t></a:r></a:p>`) +
			shape(3, "Content 2", `<p:ph idx="1"/>`, 1600200, paras.String())
		ents = append(ents,
			zipEntry{"ppt/" + name, []byte(xmlHead + `<p:sld ` + nsMain + `><p:cSld><p:spTree>` + tree + `</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>`)},
			zipEntry{fmt.Sprintf("ppt/slides/_rels/slide%d.xml.rels", n), rels([2]string{relLayout, "../slideLayouts/slideLayout1.xml"})})
	}
	ents = append(ents,
		zipEntry{"[Content_Types].xml", contentTypes(over...)},
		zipEntry{"ppt/presentation.xml", []byte(xmlHead + `<p:presentation ` + nsMain + `>` +
			`<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>` +
			`<p:sldIdLst>` + ids.String() + `</p:sldIdLst>` +
			`<p:sldSz cx="9144000" cy="6858000" type="screen4x3"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>`)},
		zipEntry{"ppt/_rels/presentation.xml.rels", rels(presRels...)},
		zipEntry{"ppt/slideMasters/slideMaster1.xml", []byte(xmlHead + `<p:sldMaster ` + nsMain + `><p:cSld><p:spTree>` + emptyTree + `</p:spTree></p:cSld>` +
			`<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>` +
			`<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>`)},
		zipEntry{"ppt/slideMasters/_rels/slideMaster1.xml.rels", rels([2]string{relLayout, "../slideLayouts/slideLayout1.xml"}, [2]string{relTheme, "../theme/theme1.xml"})},
		zipEntry{"ppt/slideLayouts/slideLayout1.xml", []byte(xmlHead + `<p:sldLayout ` + nsMain + ` type="obj" preserve="1"><p:cSld name="Title and Content"><p:spTree>` + emptyTree + `</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>`)},
		zipEntry{"ppt/slideLayouts/_rels/slideLayout1.xml.rels", rels([2]string{relMaster, "../slideMasters/slideMaster1.xml"})},
		zipEntry{"ppt/theme/theme1.xml", theme()},
	)
	// [Content_Types].xml first, as Office writes it.
	slices.SortStableFunc(ents, func(x, y zipEntry) int {
		return cmp.Compare(boolInt(x.name != "[Content_Types].xml"), boolInt(y.name != "[Content_Types].xml"))
	})
	return zipOf(ents, fixtureEpoch)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// theme is a minimal complete DrawingML theme (colours, fonts, formats).
func theme() []byte {
	var clr strings.Builder
	for _, c := range [][2]string{{"dk1", "000000"}, {"lt1", "FFFFFF"}, {"dk2", "1F497D"}, {"lt2", "EEECE1"}, {"accent1", "4F81BD"}, {"accent2", "C0504D"},
		{"accent3", "9BBB59"}, {"accent4", "8064A2"}, {"accent5", "4BACC6"}, {"accent6", "F79646"}, {"hlink", "0000FF"}, {"folHlink", "800080"}} {
		fmt.Fprintf(&clr, `<a:%s><a:srgbClr val="%s"/></a:%s>`, c[0], c[1], c[0])
	}
	solid := `<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>`
	line := `<a:ln w="9525">` + solid + `</a:ln>`
	effect := `<a:effectStyle><a:effectLst/></a:effectStyle>`
	return []byte(xmlHead + `<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="Office Theme"><a:themeElements>` +
		`<a:clrScheme name="Office">` + clr.String() + `</a:clrScheme>` +
		`<a:fontScheme name="Office"><a:majorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont><a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme>` +
		`<a:fmtScheme name="Office"><a:fillStyleLst>` + solid + solid + solid + `</a:fillStyleLst><a:lnStyleLst>` + line + line + line + `</a:lnStyleLst>` +
		`<a:effectStyleLst>` + effect + effect + effect + `</a:effectStyleLst><a:bgFillStyleLst>` + solid + solid + solid + `</a:bgFillStyleLst></a:fmtScheme>` +
		`</a:themeElements><a:objectDefaults/><a:extraClrSchemeLst/></a:theme>`)
}

// notebook returns a small valid Jupyter notebook (nbformat 4).
func notebook() []byte {
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{"kernelspec": map[string]string{"name": "python3", "display_name": "Python 3", "language": "python"},
			"language_info": map[string]string{"name": "python"}},
		"cells": []map[string]any{
			{"cell_type": "markdown", "id": "intro", "metadata": map[string]any{}, "source": []string{"# Churn analysis\n", "Monthly churn by plan."}},
			{"cell_type": "code", "id": "load", "metadata": map[string]any{}, "execution_count": nil, "outputs": []any{},
				"source": []string{"import csv\n", "rows = list(csv.DictReader(open('customers.csv')))\n", "len(rows)"}},
		},
	}
	b, _ := json.MarshalIndent(nb, "", " ")
	return append(b, '\n')
}

// fixturePNG and fixtureJPEG draw a small deterministic picture.
func fixtureImage() image.Image {
	img := image.NewRGBA(image.Rect(0, 0, 96, 64))
	for y := range 64 {
		for x := range 96 {
			img.Set(x, y, color.RGBA{uint8(40 + x), uint8(90 + y), uint8(160 + (x+y)%60), 255})
		}
	}
	return img
}

func fixturePNG() []byte {
	var buf bytes.Buffer
	png.Encode(&buf, fixtureImage())
	return buf.Bytes()
}

func fixtureJPEG() []byte {
	var buf bytes.Buffer
	jpeg.Encode(&buf, fixtureImage(), &jpeg.Options{Quality: 80})
	return buf.Bytes()
}

// tgzOf returns a gzip-compressed tar archive of entries (at mtime).
func tgzOf(entries []zipEntry, mtime time.Time) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		// writes to a buffer: cannot fail
		_ = tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: mtime, Typeflag: tar.TypeReg})
		_, _ = tw.Write(e.data)
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// fixtureMP4 is the head of an MP4 file: its ftyp box, a free box and a
// small mdat (file(1) and players' sniffers recognise it).
func fixtureMP4() []byte {
	box := func(typ string, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
		return append(append(b, typ...), body...)
	}
	ftyp := append([]byte("isom"), 0, 0, 2, 0)
	ftyp = append(ftyp, "isomiso2avc1mp41"...)
	out := box("ftyp", ftyp)
	out = append(out, box("free", nil)...)
	return append(out, box("mdat", make([]byte, 256))...)
}

// fixtureWAV is a tenth of a second of silence: 8 kHz, mono, 16-bit PCM.
func fixtureWAV() []byte {
	const rate, samples = 8000, 800
	data := make([]byte, 2*samples)
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(36+len(data)))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*2)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// fixtureELF is a minimal x86-64 Linux executable that exits 0: an ELF
// header, one loadable segment, and mov eax, 60; xor edi, edi; syscall.
func fixtureELF() []byte {
	const base, ehsize, phsize = 0x400000, 64, 56
	code := []byte{0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05}
	size := uint64(ehsize + phsize + len(code))
	le := binary.LittleEndian
	b := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	b = le.AppendUint16(b, 2)    // ET_EXEC
	b = le.AppendUint16(b, 0x3e) // x86-64
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, base+ehsize+phsize) // entry
	b = le.AppendUint64(b, ehsize)             // program headers
	b = le.AppendUint64(b, 0)                  // no section headers
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, ehsize)
	b = le.AppendUint16(b, phsize)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, 64)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 1) // PT_LOAD
	b = le.AppendUint32(b, 5) // R+X
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, 0x1000)
	return append(b, code...)
}

// fixturePCAP is a capture of one DNS query (Ethernet, IPv4, UDP) on a
// home network, at t.
func fixturePCAP(t time.Time) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 65535)
	b = le.AppendUint32(b, 1) // Ethernet
	q := []byte{0x1a, 0x2b, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1}
	udp := binary.BigEndian.AppendUint16(nil, 53124)
	udp = binary.BigEndian.AppendUint16(udp, 53)
	udp = binary.BigEndian.AppendUint16(udp, uint16(8+len(q)))
	udp = append(binary.BigEndian.AppendUint16(udp, 0), q...)
	ip := []byte{0x45, 0, 0, 0, 0x4d, 0x21, 0x40, 0, 64, 17, 0, 0, 192, 168, 1, 23, 192, 168, 1, 1}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	frame := append([]byte{0x3c, 0x37, 0x86, 0x11, 0x22, 0x33, 0xa4, 0x83, 0xe7, 0x44, 0x55, 0x66, 0x08, 0x00}, ip...)
	frame = append(frame, udp...)
	b = le.AppendUint32(b, uint32(t.Unix()))
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, uint32(len(frame)))
	b = le.AppendUint32(b, uint32(len(frame)))
	return append(b, frame...)
}
