// Checks a Sigstore bundle signed with a key (no log, no timestamp) with
// @sigstore/verify: node verify-bundle.js PUBKEY.pem HINT ARTIFACT BUNDLE.json
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');

const [pubPath, hint, artifactPath, bundlePath] = process.argv.slice(2);
const key = crypto.createPublicKey(fs.readFileSync(pubPath));
const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
const trust = toTrustMaterial(
  { mediaType: '', tlogs: [], ctlogs: [], certificateAuthorities: [], timestampAuthorities: [] },
  (h) => {
    if (h !== hint) throw new Error(`unknown key hint ${h}`);
    return { publicKey: key, validFor: () => true };
  });
const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
verifier.verify(toSignedEntity(bundle, fs.readFileSync(artifactPath)));
console.log(`@sigstore/verify accepted ${bundlePath}`);
