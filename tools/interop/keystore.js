#!/usr/bin/env node
// Keystore interop checks with ethers (an independent Ethereum implementation).
//   node keystore.js decrypt FILE PASSWORD        -> prints the address and private key
//   node keystore.js encrypt KEYHEX PASSWORD N    -> prints keystore JSON (scrypt N)
"use strict";
const fs = require("fs");
const { Wallet, encryptKeystoreJsonSync } = require("ethers");

const [cmd, a, b, c] = process.argv.slice(2);
if (cmd === "decrypt") {
  const w = Wallet.fromEncryptedJsonSync(fs.readFileSync(a, "utf8"), b);
  console.log(w.address);
  console.log(w.privateKey);
} else if (cmd === "encrypt") {
  const w = new Wallet(a);
  const json = encryptKeystoreJsonSync({ address: w.address, privateKey: w.privateKey }, b, {
    scrypt: { N: Number(c), r: 8, p: 1 },
  });
  console.log(json);
} else {
  console.error("usage: keystore.js decrypt FILE PASSWORD | encrypt KEYHEX PASSWORD N");
  process.exit(2);
}
