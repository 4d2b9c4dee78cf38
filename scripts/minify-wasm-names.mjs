// Shortens the names a wasm-bindgen module and its glue (`--target web`,
// minified) agree on: every import's name (`__wbg_getAttribute_0123abcd…`,
// 343 of them, a third of each a random hash that gzip cannot shrink) and
// module (`./errand_page_bg.js`), and the exports only the glue calls (the
// closures' `wasm_bindgen_…___invoke…`, `__wbindgen_malloc`, …), in the .wasm
// and in the glue alike. The functions the loader calls (`handle`, …) keep
// their names. Binaryen's --minify-imports-and-exports renames only `env`
// imports and writes its mapping out; this rewrites both files together.
// Also drops the custom sections `producers` and `target_features`.
// Fails (and changes nothing) when a name is not found in the glue exactly
// where expected.
//
// Usage: node scripts/minify-wasm-names.mjs MODULE_bg.wasm GLUE.js EXPORT...
//   EXPORT...: the exports to keep as they are.
import { readFileSync, writeFileSync } from 'node:fs';

const [wasmPath, gluePath, ...keep] = process.argv.slice(2);
if (!wasmPath || !gluePath) {
  console.error('usage: minify-wasm-names.mjs MODULE_bg.wasm GLUE.js EXPORT...');
  process.exit(2);
}
const bytes = readFileSync(wasmPath);
let glue = readFileSync(gluePath, 'utf8');
const fail = (why) => {
  console.error(`minify-wasm-names: ${why}`);
  process.exit(1);
};

// ---- LEB128 and names ----
const readU = (b, i) => {
  let r = 0;
  let s = 0;
  let x;
  do {
    x = b[i++];
    r += (x & 0x7f) * 2 ** s;
    s += 7;
  } while (x & 0x80);
  return [r, i];
};
const writeU = (n) => {
  const out = [];
  do {
    let x = n % 128;
    n = Math.floor(n / 128);
    if (n) x |= 0x80;
    out.push(x);
  } while (n);
  return out;
};
const readName = (b, i) => {
  const [len, j] = readU(b, i);
  return [b.subarray(j, j + len).toString('utf8'), j + len];
};
const name = (s) => {
  const b = Buffer.from(s, 'utf8');
  return [...writeU(b.length), ...b];
};
// Short names: a … Z, then two characters, and so on (valid JavaScript
// identifiers; property names only, so keywords would do too).
const FIRST = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$';
const REST = `${FIRST}0123456789`;
let counter = 0;
const taken = new Set(keep);
const short = () => {
  for (;;) {
    let n = counter++;
    let s = FIRST[n % FIRST.length];
    n = Math.floor(n / FIRST.length);
    while (n > 0) {
      n -= 1;
      s += REST[n % REST.length];
      n = Math.floor(n / REST.length);
    }
    if (!taken.has(s) && s !== '__proto__') {
      taken.add(s);
      return s;
    }
  }
};
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ID = '[A-Za-z0-9_$]';

// ---- the sections ----
if (bytes.readUInt32LE(0) !== 0x6d736100 || bytes.readUInt32LE(4) !== 1) fail('not a wasm module');
const sections = [];
for (let i = 8; i < bytes.length; ) {
  const id = bytes[i];
  const [size, start] = readU(bytes, i + 1);
  sections.push({ id, body: bytes.subarray(start, start + size) });
  i = start + size;
}

const out = [bytes.subarray(0, 8)];
let renamedImports = 0;
let renamedExports = 0;
for (const { id, body } of sections) {
  let rebuilt = null;
  if (id === 2) {
    // Imports: (module, name, kind, …) each; the glue's module, and snippets.
    let [count, i] = readU(body, 0);
    const parts = [...writeU(count)];
    const modules = new Map();
    while (count--) {
      const [module, a] = readName(body, i);
      const [field, b] = readName(body, a);
      // The rest of the entry (its kind and type), copied as it is.
      const kind = body[b];
      let end = b + 1;
      if (kind === 0) [, end] = readU(body, end);
      else fail(`import ${field} is not a function (kind ${kind})`);
      if (module.startsWith('./snippets/')) {
        // A snippet (`#[wasm_bindgen(inline_js)]`, proto.rs's readers): the
        // glue imports its file as a namespace whose names are the file's
        // own exports (and may list it more than once): kept as it is.
        parts.push(...body.subarray(i, end));
        i = end;
        continue;
      }
      if (!modules.has(module)) {
        const m = JSON.stringify(module);
        const found = glue.split(`${m}:`).length - 1;
        if (found !== 1) fail(`the module ${m} is in the glue ${found} times`);
        const to = modules.size === 0 ? 'a' : `a${modules.size}`;
        glue = glue.replace(`${m}:`, `${JSON.stringify(to)}:`);
        modules.set(module, to);
      }
      const to = short();
      const key = new RegExp(`(?<=[{,])${escape(field)}(?=:)`, 'g');
      const found = (glue.match(key) || []).length;
      const anywhere = glue.split(field).length - 1;
      if (found !== 1 || anywhere !== 1) {
        fail(`the import ${field} is in the glue ${anywhere} times (${found} as a key)`);
      }
      glue = glue.replace(key, to);
      parts.push(...name(modules.get(module)), ...name(to), ...body.subarray(b, end));
      renamedImports++;
      i = end;
    }
    rebuilt = Buffer.from(parts);
  } else if (id === 7) {
    // Exports: (name, kind, index) each.
    let [count, i] = readU(body, 0);
    const parts = [...writeU(count)];
    while (count--) {
      const [field, a] = readName(body, i);
      const [, end] = readU(body, a + 1);
      let to = field;
      if (!keep.includes(field)) {
        const use = new RegExp(`\\.${escape(field)}(?!${ID})`, 'g');
        const found = (glue.match(use) || []).length;
        const anywhere = glue.split(field).length - 1;
        if (found > 0 && found === anywhere) {
          to = short();
          glue = glue.replace(use, `.${to}`);
          renamedExports++;
        } else if (anywhere > 0) {
          fail(`the export ${field} is in the glue other than as .${field}`);
        }
      }
      parts.push(...name(to), ...body.subarray(a, end));
      i = end;
    }
    rebuilt = Buffer.from(parts);
  }
  if (id === 0) {
    // Custom sections: wasm-opt keeps `producers` (the compilers' versions)
    // and `target_features` (wasm-bindgen has read it already); the browser
    // needs neither.
    const [section] = readName(body, 0);
    if (section === 'producers' || section === 'target_features') continue;
  }
  const b = rebuilt ?? body;
  out.push(Buffer.from([id, ...writeU(b.length)]), b);
}
// The glue's own names must not meet the new ones: every new name is
// only a property key or after a dot, checked above.
writeFileSync(wasmPath, Buffer.concat(out));
writeFileSync(gluePath, glue);
console.error(`minify-wasm-names: ${renamedImports} imports, ${renamedExports} exports renamed`);
