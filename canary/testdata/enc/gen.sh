#!/bin/sh
# gen.sh: regenerates the encoding fixtures of TestFindEncodings with the
# real tools (python3 with cryptography, openssl, xz, zstd, iconv, base64).
# Every fixture hides the line below; the test knows which key each used.
# Run from this folder: sh gen.sh
set -eu
cd "$(dirname "$0")"
text='aws_access_key_id = AKIAQSBXCTL7Q2X4ZT3M
'
printf '%s' "$text" > plain.txt
export text

py() { python3 -c "$1"; }

# XOR: one byte (what the difference index finds) and a repeated key.
py 'import os,sys; sys.stdout.buffer.write(bytes(b ^ 0x5a for b in os.environ["text"].encode()))' > xor1.bin
py 'import os,sys,base64; sys.stdout.write(base64.b64encode(bytes(b ^ 0xa7 for b in os.environ["text"].encode())).decode())' > xor1.b64
py 'import os,sys; k=b"k3y!"; d=os.environ["text"].encode(); sys.stdout.buffer.write(bytes(b ^ k[i%len(k)] for i,b in enumerate(d)))' > xorkey.bin

# UTF-16.
printf '%s' "$text" | iconv -f UTF-8 -t UTF-16 > utf16.txt
printf '%s' "$text" | iconv -f UTF-8 -t UTF-16BE > utf16be.txt
printf '%s' "$text" | iconv -f UTF-8 -t UTF-16LE | base64 -w 0 > utf16le.b64

# base85 family.
py 'import os,sys,base64; sys.stdout.write(base64.a85encode(os.environ["text"].encode(), adobe=True, wrapcol=20).decode())' > a85-adobe.txt
py 'import os,sys,base64; sys.stdout.write(base64.a85encode(b"xy"+os.environ["text"].encode()).decode())' > a85.txt
py 'import os,sys,base64; sys.stdout.write("xbtoa Begin\n"+base64.a85encode(os.environ["text"].encode(), foldspaces=True, wrapcol=78).decode()+"\nxbtoa End N 44 2c E 4f S 1234 R 5678\n")' > btoa.txt
py 'import os,sys,base64; sys.stdout.write(base64.b85encode(b"x"+os.environ["text"].encode()).decode())' > b85.txt

# Compression.
printf '%s' "$text" | xz -c > plain.xz
py 'import os,sys,lzma; sys.stdout.buffer.write(lzma.compress(os.environ["text"].encode()*3))' > python.xz
printf '%s' "$text" | xz -c | base64 -w 0 > xz.b64
printf '%s' "$text" | zstd -q -c > plain.zst
py 'import os,sys,zlib; c=zlib.compressobj(9, zlib.DEFLATED, -15); sys.stdout.buffer.write(c.compress(os.environ["text"].encode())+c.flush())' > raw.deflate
py 'import os,sys,zlib,base64; c=zlib.compressobj(9, zlib.DEFLATED, -15); sys.stdout.write(base64.b64encode(c.compress(os.environ["text"].encode()*2)+c.flush()).decode())' > raw-deflate.b64

# Escapes of every byte.
py 'import os,sys; sys.stdout.write("".join("%%%02X" % b for b in os.environ["text"].encode()))' > percent-all.txt
py 'import os,sys; sys.stdout.write("".join("\\u%04x" % ord(c) for c in os.environ["text"]))' > u-escape.txt
py 'import os,sys; sys.stdout.write("".join("\\x%02x" % b for b in os.environ["text"].encode()))' > x-escape.txt

# base64 wrapped short, with any alignment.
printf 'xx%s' "$text" | base64 -w 4 > b64-w4.txt
py 'import os,sys,base64,textwrap; sys.stdout.write("\r\n".join(textwrap.wrap(base64.b64encode(b"z"+os.environ["text"].encode()).decode(), 13)))' > b64-w13-crlf.txt

# openssl enc with a password or a key given on the command line.
printf '%s' "$text" | openssl enc -aes-256-cbc -md md5 -k 'hunter2' -out enc-md5.bin 2>/dev/null
printf '%s' "$text" | openssl enc -aes-256-cbc -a -A -pass pass:hunter2 -out enc-sha256.b64
printf '%s' "$text" | openssl enc -aes-256-cbc -pbkdf2 -k 'hunter2' -out enc-pbkdf2.bin
printf '%s' "$text" | openssl enc -aes-128-ctr -pbkdf2 -iter 1000 -md sha512 -pass pass:hunter2 -out enc-ctr.bin
printf '%s' "$text" | openssl enc -aes-256-cbc -nosalt -k 'hunter2' -out enc-nosalt.bin 2>/dev/null
printf '%s' "$text" | openssl enc -aes-128-cbc -K 000102030405060708090a0b0c0d0e0f -iv 0f0e0d0c0b0a09080706050403020100 -out enc-raw.bin

# AES from a one-liner: cryptography's AESGCM with the nonce first, Fernet.
py 'import os,sys; from cryptography.hazmat.primitives.ciphers.aead import AESGCM; n=os.urandom(12); sys.stdout.buffer.write(n+AESGCM(b"0123456789abcdef0123456789abcdef").encrypt(n, os.environ["text"].encode(), None))' > aesgcm.bin
py 'import os,sys; from cryptography.fernet import Fernet; sys.stdout.write(Fernet(b"bXkgc2VjcmV0IGZlcm5ldCBrZXkgb2YgMzIgYnl0ZXM=").encrypt(os.environ["text"].encode()).decode())' > fernet.txt
