// Secret material kept in the data directory, created once on first start:
// the master key that seals stored private keys, and the TLS certificate for the mail listeners.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

export const MASTER_KEY_FILE = 'master.key';
export const TLS_CERT_FILE = 'tls-cert.pem';
export const TLS_KEY_FILE = 'tls-key.pem';

/** 32 random bytes, hex, mode 0600. Losing it makes sealed DKIM keys unreadable: back it up with the database. */
export function loadOrCreateMasterKey(dataDir: string): Buffer {
  const file = path.join(dataDir, MASTER_KEY_FILE);
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  if (key.length !== 32) throw new Error(`${file} is not a 32-byte hex key`);
  return key;
}

export interface TlsMaterial {
  cert: string;
  key: string;
  selfSigned: boolean;
}

/** The configured certificate, or a self-signed one for `hostname` generated once into the data dir. */
export async function loadTlsMaterial(dataDir: string, hostname: string, certFile: string | null, keyFile: string | null): Promise<TlsMaterial> {
  if (certFile && keyFile) return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), selfSigned: false };
  const certPath = path.join(dataDir, TLS_CERT_FILE);
  const keyPath = path.join(dataDir, TLS_KEY_FILE);
  if (!existsSync(certPath) || !existsSync(keyPath)) {
    // selfsigned (and the ASN.1/X.509 libraries under it, ~19 MiB) only when a certificate is made.
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: hostname }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + 10 * 365 * 24 * 3600 * 1000),
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] }],
    });
    writeFileSync(keyPath, pems.private, { mode: 0o600 });
    writeFileSync(certPath, pems.cert);
  }
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8'), selfSigned: true };
}
