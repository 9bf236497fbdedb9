// Encodes a text file with Hugging Face's own tokenizer implementation
// (@huggingface/tokenizers, pure JS) from a tokenizer.json, and prints the
// ids as JSON: the independent side of crucible's tokenizer interop test.
//   node tools/interop/tokenize.mjs tokenizer.json text.txt
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const [tokenizerPath, textPath] = process.argv.slice(2);
const tokenizer = new Tokenizer(JSON.parse(readFileSync(tokenizerPath, "utf8")), {});
const text = readFileSync(textPath, "utf8");
const encoded = tokenizer.encode(text, { add_special_tokens: false });
process.stdout.write(JSON.stringify({ ids: encoded.ids, decoded: tokenizer.decode(encoded.ids) }));
