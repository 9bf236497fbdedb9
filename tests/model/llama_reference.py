"""A Llama forward pass in numpy, written from the Hugging Face modelling
code's definitions (RMSNorm, rotate_half RoPE, GQA by repeat, SwiGLU).
Two uses:
  llama_reference.py CHECKPOINT CONFIG_JSON TOKENS_JSON
      crucible's checkpoint and config keys; prints the logits as JSON.
  llama_reference.py HF_FOLDER SAMPLES_JSON
      a Hugging Face folder (config.json as transformers reads it, and
      model.safetensors); prints {"loss": mean next-token cross-entropy}
      over the samples (a list of token lists)."""
import json
import os
import struct
import sys

import numpy as np


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n :]
    return {k: np.frombuffer(data[v["data_offsets"][0] : v["data_offsets"][1]], dtype="<f4").reshape(v["shape"]).astype(np.float64)
            for k, v in header.items()}


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def logits(w, c, tokens):
    T = tokens.shape[0]
    hd = c["dim"] // c["n_heads"]
    inv = 1.0 / (c["rope_theta"] ** (np.arange(0, hd, 2) / hd))
    f = np.outer(np.arange(T), inv)
    emb = np.concatenate([f, f], -1)
    cos, sin = np.cos(emb), np.sin(emb)
    h = w["model.embed_tokens.weight"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(c["n_layers"]):
        p = f"model.layers.{i}."
        x = rms(h, w[p + "input_layernorm.weight"], c["norm_eps"])
        q = (x @ w[p + "self_attn.q_proj.weight"].T).reshape(T, c["n_heads"], hd).transpose(1, 0, 2)
        k = (x @ w[p + "self_attn.k_proj.weight"].T).reshape(T, c["n_kv_heads"], hd).transpose(1, 0, 2)
        v = (x @ w[p + "self_attn.v_proj.weight"].T).reshape(T, c["n_kv_heads"], hd).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = c["n_heads"] // c["n_kv_heads"]
        k, v = np.repeat(k, rep, 0), np.repeat(v, rep, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(T, c["dim"])
        h = h + o @ w[p + "self_attn.o_proj.weight"].T
        x = rms(h, w[p + "post_attention_layernorm.weight"], c["norm_eps"])
        g = x @ w[p + "mlp.gate_proj.weight"].T
        h = h + ((g / (1 + np.exp(-g))) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return rms(h, w["model.norm.weight"], c["norm_eps"]) @ head.T


def from_hf(folder):
    """crucible's names for what transformers reads from config.json."""
    hf = json.load(open(os.path.join(folder, "config.json")))
    assert hf["architectures"] == ["LlamaForCausalLM"] and hf["model_type"] == "llama"
    assert hf["hidden_act"] == "silu" and not hf.get("attention_bias") and not hf.get("mlp_bias")
    c = {"dim": hf["hidden_size"], "n_heads": hf["num_attention_heads"], "n_kv_heads": hf["num_key_value_heads"],
         "n_layers": hf["num_hidden_layers"], "rope_theta": hf["rope_theta"], "norm_eps": hf["rms_norm_eps"]}
    w = load(os.path.join(folder, "model.safetensors"))
    assert w["model.embed_tokens.weight"].shape == (hf["vocab_size"], hf["hidden_size"])
    assert hf["tie_word_embeddings"] == ("lm_head.weight" not in w)
    return w, c


def main():
    if os.path.isdir(sys.argv[1]):
        w, c = from_hf(sys.argv[1])
        losses = []
        for sample in json.loads(sys.argv[2]):
            t = np.array(sample)
            z = logits(w, c, t[:-1])
            z = z - z.max(-1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
            losses.append(-logp[np.arange(len(t) - 1), t[1:]].mean())
        print(json.dumps({"loss": float(np.mean(losses))}))
        return
    w = load(sys.argv[1])
    c = json.loads(sys.argv[2])
    print(json.dumps(logits(w, c, np.array(json.loads(sys.argv[3]))).tolist()))


main()
