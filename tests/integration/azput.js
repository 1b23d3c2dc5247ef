// azput.js - Azure Blob Storage's REST API for the tests, with Node's own
// crypto (independent of zarrfs's signing): make containers, upload a
// directory tree, print an account SAS token. Shared Key as Microsoft's
// "Authorize with Shared Key" describes it.
//
//   node azput.js container ENDPOINT ACCOUNT KEY NAME [public]
//   node azput.js tree ENDPOINT ACCOUNT KEY NAME DIR    (keys: relative paths)
//   node azput.js put ENDPOINT ACCOUNT KEY NAME BLOB FILE
//   node azput.js sas ACCOUNT KEY                       (read and list)
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');

const VERSION = '2021-08-06';

function hmac(key, s) {
  return crypto.createHmac('sha256', Buffer.from(key, 'base64')).update(s, 'utf8').digest('base64');
}

// A signed request; resolves with the status (rejects on >= 300).
function request(endpoint, account, key, method, rpath, query, headers, body) {
  const u = new URL(endpoint);
  const base = u.pathname.replace(/\/$/, '');
  const encPath = base + '/' + rpath.split('/').map(encodeURIComponent).join('/');
  const qs = Object.keys(query).sort().map((k) => k + '=' + encodeURIComponent(query[k])).join('&');
  const h = Object.assign({ 'x-ms-date': new Date().toUTCString(), 'x-ms-version': VERSION }, headers);
  const len = body ? body.length : 0;
  const std = ['Content-Encoding', 'Content-Language', 'Content-Length', 'Content-MD5', 'Content-Type',
    'Date', 'If-Modified-Since', 'If-Match', 'If-None-Match', 'If-Unmodified-Since', 'Range'];
  const lines = [method];
  for (const n of std) lines.push(n === 'Content-Length' ? (len ? String(len) : '') : (h[n] || ''));
  const xms = Object.keys(h).filter((n) => n.toLowerCase().startsWith('x-ms-'))
    .map((n) => n.toLowerCase() + ':' + String(h[n]).trim()).sort();
  let res = '/' + account + encPath;
  for (const k of Object.keys(query).sort()) res += '\n' + k.toLowerCase() + ':' + query[k];
  const sts = lines.join('\n') + '\n' + xms.map((l) => l + '\n').join('') + res;
  h.Authorization = 'SharedKey ' + account + ':' + hmac(key, sts);
  h['Content-Length'] = len;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method,
      path: encPath + (qs ? '?' + qs : ''), headers: h }, (r) => {
      let out = '';
      r.on('data', (d) => { out += d; });
      r.on('end', () => (r.statusCode < 300 ? resolve(r.statusCode)
        : reject(new Error(method + ' ' + rpath + ': HTTP ' + r.statusCode + ' ' + out))));
    });
    req.on('error', reject);
    req.end(body || undefined);
  });
}

function walk(dir, rel, out) {
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? rel + '/' + e.name : e.name;
    if (e.isDirectory()) walk(dir, r, out);
    else if (e.isFile()) out.push(r);
  }
  return out;
}

function putBlob(ep, acct, key, container, blob, file) {
  return request(ep, acct, key, 'PUT', container + '/' + blob, {},
    { 'x-ms-blob-type': 'BlockBlob' }, fs.readFileSync(file));
}

async function main(a) {
  if (a[0] === 'container') {
    const h = a[5] === 'public' ? { 'x-ms-blob-public-access': 'container' } : {};
    await request(a[1], a[2], a[3], 'PUT', a[4], { restype: 'container' }, h, null);
  } else if (a[0] === 'tree') {
    for (const f of walk(a[5], '', [])) await putBlob(a[1], a[2], a[3], a[4], f, path.join(a[5], f));
  } else if (a[0] === 'put') {
    await putBlob(a[1], a[2], a[3], a[4], a[5], a[6]);
  } else if (a[0] === 'sas') {
    // An account SAS (version 2019-12-12): blob service, every resource
    // type, read and list, valid for a day from an hour ago.
    const st = new Date(Date.now() - 3600e3).toISOString().replace(/\.\d+Z$/, 'Z');
    const se = new Date(Date.now() + 86400e3).toISOString().replace(/\.\d+Z$/, 'Z');
    const p = { sv: '2019-12-12', ss: 'b', srt: 'sco', sp: 'rl', st, se, spr: 'https,http' };
    const sts = [a[1], p.sp, p.ss, p.srt, p.st, p.se, '', p.spr, p.sv, ''].join('\n');
    p.sig = hmac(a[2], sts);
    process.stdout.write(Object.keys(p).map((k) => k + '=' + encodeURIComponent(p[k])).join('&') + '\n');
  } else {
    throw new Error('usage: azput.js container|tree|put|sas ...');
  }
}

main(process.argv.slice(2)).catch((e) => { process.stderr.write(String(e.message) + '\n'); process.exit(1); });
