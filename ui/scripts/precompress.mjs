// Writes a brotli (.br) and a gzip (.gz) copy beside each text file of the build, once, at
// maximum quality, so the server sends them as they are (crates/http/src/ui.rs) instead of
// compressing on every request. A copy that would not be smaller than its file is not written.
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const TEXT = /\.(js|mjs|css|html|svg|json|txt|map)$/;

async function* files(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (TEXT.test(entry.name)) yield path;
  }
}

const encoders = {
  br: (data) =>
    brotliCompressSync(data, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
        [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
      },
    }),
  gz: (data) => gzipSync(data, { level: constants.Z_BEST_COMPRESSION }),
};

const dist = process.argv[2] ?? "dist";
await stat(dist);
let written = 0;
for await (const path of files(dist)) {
  const data = await readFile(path);
  for (const [suffix, encode] of Object.entries(encoders)) {
    const copy = encode(data);
    if (copy.length < data.length) {
      await writeFile(`${path}.${suffix}`, copy);
      written++;
    }
  }
}
console.log(`precompressed: ${written} copies in ${dist}`);
