// DKIM signing (RFC 6376) with mailauth: rsa-sha256, relaxed/relaxed, mailauth's default list of signed
// headers (From, To, Cc, Subject, Date, Message-ID, Reply-To, MIME and List-* headers among them).
import { dkimSign } from 'mailauth/lib/dkim/sign.js';

export interface DkimKey {
  domain: string;
  selector: string;
  /** PKCS#8 PEM. */
  privateKey: string;
}

/** Returns the message with its DKIM-Signature header prepended. Throws if the key cannot sign. */
export async function signMessage(raw: Buffer, key: DkimKey, at: Date): Promise<Buffer> {
  const options = {
    canonicalization: 'relaxed/relaxed',
    algorithm: 'rsa-sha256',
    signTime: at,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKey, algorithm: 'rsa-sha256', canonicalization: 'relaxed/relaxed' }],
  };
  // mailauth's published types describe an older, flat option shape; signatureData is what it reads.
  const result = await dkimSign(raw, options as unknown as Parameters<typeof dkimSign>[1]);
  if (result.errors.length > 0) throw new Error(`DKIM signing failed: ${result.errors.map((e) => e.message).join('; ')}`);
  return Buffer.concat([Buffer.from(result.signatures, 'utf8'), raw]);
}
