// An independent verifier of seatd license files: Node's crypto only, no
// seatd code, no JOSE library. It reads from stdin a JSON list of cases,
// {"document": the armoured file's text, "vendor_key": the vendor's public
// JWK}, and writes one verdict per case: {"ok", "reason", "serial",
// "site_kid"}. file_test.go (TestNodeVerifies) runs it.
import { createPublicKey, verify } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';

const BEGIN = '-----BEGIN SEATD LICENSE FILE-----';
const SIG_BEGIN = '-----BEGIN SEATD SIGNATURE-----';
const SIG_END = '-----END SEATD SIGNATURE-----';

function check(c) {
  const text = c.document.replace(/\r\n/g, '\n').trim();
  if (!text.startsWith(BEGIN + '\n')) return { ok: false, reason: 'armour' };
  const sigAt = text.indexOf('\n' + SIG_BEGIN + '\n');
  if (sigAt < 0 || !text.endsWith('\n' + SIG_END)) return { ok: false, reason: 'armour' };
  const readable = text.slice(BEGIN.length + 1, sigAt);
  const token = text.slice(sigAt + SIG_BEGIN.length + 2, text.length - SIG_END.length - 1).replace(/\s+/g, '');

  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'jws' };
  const [h, p, s] = parts;
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  if (header.alg !== 'EdDSA' || header.typ !== 'seatd-license-file-v1') return { ok: false, reason: 'header' };

  // RFC 7515: the signature is over ASCII(base64url(header) '.' base64url(payload)).
  const key = createPublicKey({ key: c.vendor_key, format: 'jwk' });
  if (!verify(null, Buffer.from(h + '.' + p, 'ascii'), key, Buffer.from(s, 'base64url'))) {
    return { ok: false, reason: 'signature' };
  }
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  let shown;
  try {
    shown = JSON.parse(readable);
  } catch {
    return { ok: false, reason: 'readable' };
  }
  if (!isDeepStrictEqual(shown, payload)) return { ok: false, reason: 'readable' };
  return { ok: true, reason: '', serial: payload.serial, site_kid: payload.site_key.kid };
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const verdicts = JSON.parse(input).map((c) => {
    try {
      return check(c);
    } catch (e) {
      return { ok: false, reason: 'error: ' + e.message };
    }
  });
  process.stdout.write(JSON.stringify(verdicts));
});
