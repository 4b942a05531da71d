package canaryfs

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"math/big"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	_ "modernc.org/sqlite" // pure-Go SQLite for the browser and gcloud databases
)

// Binary formats of the home: SQLite databases, LevelDB logs, Berkeley DB
// and Exodus files, a CA certificate, Chrome's Linux password encryption.

type sqlRow struct {
	q    string
	args []any
}

// sqlite builds a SQLite database in memory and returns its file image
// (sqlite3_serialize): no file is written.
func (b *builder) sqlite(schema []string, rows ...sqlRow) []byte {
	if b.err != nil {
		return nil
	}
	// In-memory work with no I/O to wait on: no caller context to honour.
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		b.fail(fmt.Errorf("sqlite: %w", err))
		return nil
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		b.fail(fmt.Errorf("sqlite: %w", err))
		return nil
	}
	defer c.Close()
	for _, q := range schema {
		if _, err := c.ExecContext(ctx, q); err != nil {
			b.fail(fmt.Errorf("sqlite: %s: %w", q, err))
		}
	}
	for _, r := range rows {
		if _, err := c.ExecContext(ctx, r.q, r.args...); err != nil {
			b.fail(fmt.Errorf("sqlite: %s: %w", r.q, err))
		}
	}
	var out []byte
	err = c.Raw(func(dc any) error {
		s, ok := dc.(interface{ Serialize() ([]byte, error) })
		if !ok {
			return fmt.Errorf("driver %T cannot serialize", dc)
		}
		out, err = s.Serialize()
		return err
	})
	if err != nil {
		b.fail(fmt.Errorf("sqlite: serialize: %w", err))
	}
	return out
}

// chromeKeyLinux is Chrome's key on Linux without a keyring:
// PBKDF2-SHA1("peanuts", "saltysalt", 1 iteration).
func chromeKeyLinux() []byte {
	k, _ := pbkdf2.Key(sha1.New, "peanuts", []byte("saltysalt"), 1, 16)
	return k
}

// chromeEncrypt encrypts as Chrome does ("v10": AES-128-CBC with the
// persona's key (chromeKeyLinux, or chromeKeyMac from the keychain), IV of
// 16 spaces, PKCS#7 padding).
func (b *builder) chromeEncrypt(plain []byte) []byte {
	key := b.chromeKey
	if key == nil {
		key = chromeKeyLinux()
	}
	blk, _ := aes.NewCipher(key)
	pad := 16 - len(plain)%16
	p := append(bytes.Clone(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, len(p))
	cipher.NewCBCEncrypter(blk, bytes.Repeat([]byte(" "), 16)).CryptBlocks(out, p)
	return append([]byte("v10"), out...)
}

// chromeTime is Chrome's timestamp: microseconds since 1601-01-01 UTC.
func chromeTime(t time.Time) int64 { return (t.Unix() + 11644473600) * 1_000_000 }

// caCert returns a self-signed Ed25519 CA certificate in PEM (Ed25519
// signatures are deterministic, so seeded homes stay reproducible).
func (b *builder) caCert(cn string) string {
	priv := ed25519.NewKeyFromSeed(b.m.Bytes(32))
	nb := b.now.Add(-time.Duration(100+b.m.Intn(600)) * 24 * time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(b.m.Bytes(16)), Subject: pkix.Name{CommonName: cn},
		NotBefore: nb, NotAfter: nb.Add(10 * 365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		b.fail(fmt.Errorf("ca certificate: %w", err))
		return ""
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// walletDat returns a Berkeley DB B-tree file in the shape of Bitcoin Core's
// legacy wallet.dat: a metadata page with the B-tree magic, and leaf pages
// with the records wallets hold (name, key/ckey, mkey, version). The
// address is the token's text needle; the encrypted key is a raw needle.
func (b *builder) walletDat(addr canary.Token) []byte {
	const pageSize = 4096
	out := make([]byte, 6*pageSize)
	meta := out[:pageSize]
	binary.LittleEndian.PutUint32(meta[12:], 0x053162) // btree magic
	binary.LittleEndian.PutUint32(meta[16:], 9)        // version
	binary.LittleEndian.PutUint32(meta[20:], pageSize)
	meta[25] = 9 // page type: btree metadata
	binary.LittleEndian.PutUint32(meta[32:], 5)
	copy(meta[52:72], b.m.Bytes(20)) // file id
	var ckey []byte                  // the encrypted key: the address's raw needle
	b.secretly(func() { ckey = b.m.Bytes(48) })
	var recs []byte
	rec := func(k, v []byte) {
		recs = append(recs, byte(len(k)))
		recs = append(recs, k...)
		recs = append(recs, byte(len(v)))
		recs = append(recs, v...)
	}
	rec([]byte("\x07version"), []byte{0x9c, 0x62, 0x03, 0x00})
	rec(append([]byte("\x04mkey"), 1, 0, 0, 0), append(b.m.Bytes(48), b.m.Bytes(8)...))
	rec(append([]byte("\x04ckey\x21"), append([]byte{2 + byte(b.m.Intn(2))}, b.m.Bytes(32)...)...), append([]byte{0x30}, ckey...))
	rec(append([]byte("\x04name"), append([]byte{byte(len(addr.Value))}, addr.Value...)...), []byte("\x00"))
	rec([]byte("\x0bdefaultkey"), append([]byte{0x21, 3}, b.m.Bytes(32)...))
	rec([]byte("\x0bbestblock\x00"), append([]byte{0x80, 0x11, 0x01, 0}, b.m.Bytes(32)...))
	for p := 1; p < 6; p++ {
		page := out[p*pageSize : (p+1)*pageSize]
		binary.LittleEndian.PutUint32(page[8:], uint32(p))
		page[25] = 5 // leaf page
		if p == 2 {
			copy(page[26:], recs)
		} else {
			copy(page[26:], b.m.Bytes(pageSize/2))
		}
	}
	addr.RawNeedles = append(addr.RawNeedles, ckey)
	for i := range b.tokens {
		if b.tokens[i].ID == addr.ID {
			b.tokens[i] = addr
		}
	}
	return out
}

// seco returns an Exodus-style encrypted container: the "SECO" magic,
// version, a header with the scrypt salt and nonces, then ciphertext.
func (b *builder) seco() []byte {
	out := []byte("SECO")
	out = binary.BigEndian.AppendUint32(out, 0)
	out = append(out, []byte("seco-v0-scrypt-aes")...)
	out = append(out, make([]byte, 14)...)
	out = append(out, b.m.Bytes(32+12+16+12+16)...)
	out = binary.BigEndian.AppendUint32(out, uint32(256+b.m.Intn(1024)))
	n := int(binary.BigEndian.Uint32(out[len(out)-4:]))
	return append(out, b.m.Bytes(n)...)
}

type kv struct{ k, v string }

// levelDB writes the files of a LevelDB directory (CURRENT, LOCK, LOG,
// MANIFEST-000001 and the write-ahead log 000003.log holding kvs in one
// batch), as Chrome's extension and local storage keep them.
func (b *builder) levelDB(rel string, kvs []kv) {
	var batch []byte
	batch = binary.LittleEndian.AppendUint64(batch, 1) // sequence
	batch = binary.LittleEndian.AppendUint32(batch, uint32(len(kvs)))
	for _, e := range kvs {
		batch = append(batch, 1) // put
		batch = binary.AppendUvarint(batch, uint64(len(e.k)))
		batch = append(batch, e.k...)
		batch = binary.AppendUvarint(batch, uint64(len(e.v)))
		batch = append(batch, e.v...)
	}
	t := b.recent()
	b.put(rel+"/000003.log", 0o600, levelLog(batch), t)
	b.put(rel+"/CURRENT", 0o600, []byte("MANIFEST-000001\n"), t)
	b.put(rel+"/LOCK", 0o600, nil, t)
	b.put(rel+"/LOG", 0o600, []byte(t.Format("2006/01/02-15:04:05.000000")+" 7f1c2b3fe6c0 Delete type=3 #1\n"), t)
	var edit []byte
	edit = append(edit, 1)
	edit = binary.AppendUvarint(edit, uint64(len("leveldb.BytewiseComparator")))
	edit = append(edit, "leveldb.BytewiseComparator"...)
	edit = append(edit, 2, 3, 3, 4, 4, 0) // log number 3, next file 4, last sequence 0
	b.put(rel+"/MANIFEST-000001", 0o600, levelLog(edit), t)
}

// levelLog frames one record as a LevelDB log block: masked CRC-32C,
// length, type FULL.
func levelLog(rec []byte) []byte {
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	crc.Write([]byte{1})
	crc.Write(rec)
	c := crc.Sum32()
	c = (c>>15 | c<<17) + 0xa282ead8
	out := binary.LittleEndian.AppendUint32(nil, c)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(rec)))
	out = append(out, 1)
	return append(out, rec...)
}
