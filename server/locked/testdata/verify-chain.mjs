// An independent verifier of locked mode's chain of trust, vendor →
// license file → site key → lease certificate: Node's crypto only, no
// seatd code, no JOSE library. It reads from stdin a JSON list of cases,
// {"file": a license file (site.lic's text, or its JWS alone),
// "certificate": a lease certificate (JWS), "vendor_key": the vendor's
// public JWK, "now": Unix seconds}, and writes one verdict per case:
// {"ok", "reason", "serial", "license", "lease_id"}, reason one of
// file-signature, file-expired, site-key, serial, license, expired.
// node_test.go (TestNodeVerifiesTheChain) runs it.
import { createHash, createPublicKey, verify } from 'node:crypto';

const SIG_BEGIN = '-----BEGIN SEATD SIGNATURE-----';
const SIG_END = '-----END SEATD SIGNATURE-----';

// jws splits a compact JWS and checks its signature with key (a public
// JWK): RFC 7515, the signature is over ASCII(header '.' payload).
function jws(token, key) {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [h, p, s] = parts;
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  if (header.alg !== 'EdDSA') return null;
  const pub = createPublicKey({ key: { kty: key.kty, crv: key.crv, x: key.x }, format: 'jwk' });
  if (!verify(null, Buffer.from(h + '.' + p, 'ascii'), pub, Buffer.from(s, 'base64url'))) return null;
  return { header, payload: JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) };
}

// kid is seatd's key id: base64url of the first 12 bytes of the SHA-256
// of the 32-byte public key.
function kid(x) {
  return createHash('sha256').update(Buffer.from(x, 'base64url')).digest().subarray(0, 12).toString('base64url');
}

function check(c) {
  let token = c.file.trim();
  const at = token.indexOf(SIG_BEGIN);
  if (at >= 0) {
    token = token.slice(at + SIG_BEGIN.length, token.indexOf(SIG_END)).replace(/\s+/g, '');
  }
  // 1. The vendor signed the file.
  const file = jws(token, c.vendor_key);
  if (!file || file.header.typ !== 'seatd-license-file-v1') return { ok: false, reason: 'file-signature' };
  const terms = file.payload;
  const notAfter = Date.parse(terms.not_after) / 1000;
  if (!(c.now < notAfter)) return { ok: false, reason: 'file-expired' };
  const site = terms.site_key;
  if (site.kty !== 'OKP' || site.crv !== 'Ed25519' || site.kid !== kid(site.x)) return { ok: false, reason: 'file-signature' };

  // 2. The site key the file names signed the certificate.
  const certHeader = JSON.parse(Buffer.from(c.certificate.split('.')[0], 'base64url').toString('utf8'));
  if (certHeader.kid !== site.kid) return { ok: false, reason: 'site-key' };
  const cert = jws(c.certificate, site);
  if (!cert) return { ok: false, reason: 'site-key' };
  const claims = cert.payload;
  if (claims.iss !== 'seatd' || claims.sub !== claims.lease_id) return { ok: false, reason: 'claims' };

  // 3. Under this file, for a license (and feature) it grants.
  if (claims.file_serial !== terms.serial) return { ok: false, reason: 'serial' };
  const license = terms.licenses.find((l) => l.id === claims.file_license_id && 'lic_' + l.id === claims.license_id);
  if (!license) return { ok: false, reason: 'license' };
  if (claims.feature && !(license.grants || []).some((g) => g.feature === claims.feature)) {
    return { ok: false, reason: 'license' };
  }
  if (!(claims.iat < notAfter)) return { ok: false, reason: 'file-expired' };
  if (!(c.now < claims.exp)) return { ok: false, reason: 'expired' };
  return { ok: true, reason: '', serial: terms.serial, license: license.id, lease_id: claims.lease_id };
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
