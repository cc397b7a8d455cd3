"""Every sentence the site adds to the course's own text, in both editions: one table.

Design: the pages' cells are the course notebooks' own (their Chinese text comes from the
catalogs, like the notebooks'); the site adds only its landing page, the syllabus headings, the
Colab note and the short labels under exercise cells. Those strings live here as whole sentences,
`TEXT[key]` holding {"en": ..., "zh": ...}, with `{placeholders}` filled by the page writers;
tests/browser/test_site.py checks that both editions have every key and the same placeholders.
Markdown (MyST) is allowed in the values; `{url}`-style placeholders are filled before parsing.
"""

from __future__ import annotations

TEXT: dict[str, dict[str, str]] = {
    "site_title": {
        "en": "JAX named axes — a hands-on course",
        "zh": "JAX 命名轴——动手实践课程",
    },
    "language_name": {"en": "English", "zh": "中文"},
    # the text alternative of a figure a cell draws (compose_pages.py: its title, as the figure shows it)
    "figure_alt": {"en": "Figure: {title}", "zh": "图：{title}"},
    "figure_plot_collective_groups": {  # notebook 03's grid picture has no title of its own
        "en": "The 2 × 4 device grid, once per collective, each device coloured by the group it reduces with",
        "zh": "2 × 4 设备网格，每个集合通信操作一幅，每个设备按与它一起归约的组着色",
    },
    "switch_label": {"en": "Read this page in English", "zh": "阅读本页的中文版"},
    # ---- landing page
    "landing_intro": {
        "en": "A Jupyter course on **named axes in JAX**, in English and Chinese: you name the axes that "
        "`pmap` and `shard_map` map over, and let collectives such as `lax.psum` talk along them. "
        "Every notebook runs on 8 simulated devices on an ordinary laptop, shows the pitfalls with "
        "their real errors, and has graded exercises whose checks tell you right away what to fix.",
        "zh": "一门讲 **JAX 命名轴** 的 Jupyter 课程，有英文版和中文版：你为 `pmap` 和 `shard_map` 映射的轴命名，"
        "再让 `lax.psum` 这样的集合通信操作沿着这些轴通信。每个笔记本都能在普通笔记本电脑上用 8 个模拟设备运行，"
        "用真实的报错展示常见陷阱，并配有评分练习，练习的检查会立即告诉你该改什么。",
    },
    "teaches_heading": {"en": "What you learn", "zh": "你将学到什么"},
    "teaches": {
        "en": "The manual half: axis names, `lax.psum`, `lax.pmean`, `lax.pmax` and `lax.axis_index` under "
        "`pmap`; two named axes on a device grid; data-parallel gradient averaging; the other "
        "collectives (`all_gather`, `psum_scatter`, `ppermute`, `all_to_all`); global arrays across "
        "two JAX processes. The compiler's half: `jax.shard_map` over named meshes, shardings and "
        "`jit`. How large models are split: pipeline stages, experts and long sequences (ring attention). "
        "A capstone puts it together: a small transformer trained on data, FSDP and tensor axes at once, "
        "and with its layers in pipeline stages, "
        "with a cost model and a roofline that predict what each layout costs before it runs. "
        "The [syllabus](syllabus.md) lists every notebook with its goals and exercises.",
        "zh": "手动的一半：`pmap` 下的轴名称、`lax.psum`、`lax.pmean`、`lax.pmax` 与 `lax.axis_index`；"
        "设备网格上的两个命名轴；数据并行的梯度平均；其他集合通信操作（`all_gather`、`psum_scatter`、"
        "`ppermute`、`all_to_all`）；跨两个 JAX 进程的全局数组。编译器的一半：命名网格上的 `jax.shard_map`、"
        "分片与 `jit`。大模型如何切分：流水线阶段、专家与长序列（环形注意力）。"
        "最后的综合项目把这些结合起来：在数据、FSDP 与张量三个轴上同时训练一个小型 Transformer，"
        "也把它的层切成流水线阶段来训练，"
        "并用成本模型和屋顶线模型在运行之前预测每种布局的代价。"
        "[课程大纲](syllabus.md)列出了每个笔记本的学习目标和练习。",
    },
    "audience_heading": {"en": "Who it is for", "zh": "适合谁"},
    "audience": {
        "en": "For anyone who writes NumPy or JAX and wants to run it on many devices: you know Python and "
        "`jax.numpy`, and `jax.jit` and `jax.grad` are not new to you. No accelerator is needed; "
        "with 8 GPUs or TPUs the same notebooks use them.",
        "zh": "适合会写 NumPy 或 JAX、想让代码在多个设备上运行的人：你熟悉 Python 和 `jax.numpy`，"
        "用过 `jax.jit` 和 `jax.grad`。不需要加速器；如果有 8 个 GPU 或 TPU，同样的笔记本会直接使用它们。",
    },
    "start_heading": {"en": "How to start", "zh": "如何开始"},
    "start_lab": {
        "en": "**On your own machine:** clone the repository and run `make lab`. It installs everything "
        "it needs (a virtual environment with pinned packages, Python 3.11 to 3.13) and opens "
        "JupyterLab on your own copy of the notebooks, `work/` (the Chinese edition is in `work/zh/`; "
        "`make lab EDITION=zh` starts there).",
        "zh": "**在自己的电脑上：** 克隆仓库并运行 `make lab`。它会自己安装所需的一切（一个固定版本软件包的虚拟环境，"
        "Python 3.11 至 3.13），并在你自己的笔记本副本 `work/` 上打开 JupyterLab（中文版在 `work/zh/`；"
        "`make lab EDITION=zh` 直接从那里开始）。",
    },
    "start_colab": {
        "en": "**In Colab:** every notebook page has an *Open in Colab* button. The note under it says "
        "which cell to add first: it installs the course's helper package and its pinned JAX.",
        "zh": "**在 Colab 中：** 每个笔记本页面都有 *在 Colab 中打开* 按钮。按钮下方的说明告诉你先添加哪个单元格："
        "它会安装课程的辅助包和固定版本的 JAX。",
    },
    "start_hub": {
        "en": "**On a JupyterHub:** when your instructor runs the course on a hub, log in there and use "
        "*Nbgrader ▸ Assignment List* to fetch a notebook, *Validate* to check it and *Submit* to "
        "hand it in; the feedback comes back in the same list.",
        "zh": "**在 JupyterHub 上：** 如果老师在 JupyterHub 上开设本课程，登录后用 *Nbgrader ▸ Assignment List* "
        "获取笔记本，用 *Validate* 检查，用 *Submit* 提交；反馈也会出现在同一个列表里。",
    },
    "pages_note": {
        "en": "These pages show each notebook as a student receives it, with the outputs of a fresh run "
        "of the solved notebook on 8 simulated devices: printed results, pictures and the deliberate "
        "errors. Exercise cells show the task, an empty answer cell and its check, never the answer.",
        "zh": "这些页面按学生拿到的样子展示每个笔记本，输出来自已解答笔记本在 8 个模拟设备上的一次全新运行："
        "打印的结果、图片以及刻意演示的报错。练习单元格只展示题目、空白的答案单元格和它的检查，从不展示答案。",
    },
    # ---- syllabus
    "syllabus_title": {"en": "Syllabus", "zh": "课程大纲"},
    "syllabus_intro": {
        "en": "Each notebook starts with its learning goals and ends with a summary; its graded exercises "
        "are checked as you go.",
        "zh": "每个笔记本以学习目标开始、以小结结束；其中的评分练习会在你完成时立即检查。",
    },
    "syllabus_exercises": {"en": "Graded exercises ({points} points):", "zh": "评分练习（共 {points} 分）："},
    # ---- notebook pages
    "colab_button": {"en": "Open in Colab", "zh": "在 Colab 中打开"},
    "colab_note": {
        "en": "Colab runs this notebook with its own Python. Add a cell at the top and run it once per "
        "session, then *Runtime ▸ Restart session*:\n\n"
        "```\n!git clone -q {repository} course\n"
        "!pip install -q -r course/requirements/colab.txt -e course\n```\n\n"
        "It installs the course's helper package and the pinned JAX. The notebook's own set-up cell, "
        "`setup_devices()`, then gives JAX 8 devices: Colab's accelerators when it has 8, otherwise "
        "8 simulated CPU devices, and it says which.",
        "zh": "Colab 用它自己的 Python 运行这个笔记本。先在最上方添加一个单元格，每次会话运行一次，"
        "然后选择 *代码执行程序 ▸ 重启会话*（Colab 的英文界面：*Runtime ▸ Restart session*）：\n\n"
        "```\n!git clone -q {repository} course\n"
        "!pip install -q -r course/requirements/colab.txt -e course\n```\n\n"
        "它会安装课程的辅助包和固定版本的 JAX。之后笔记本自己的设置单元格 `setup_devices()` 为 JAX "
        "准备 8 个设备：如果 Colab 有 8 个加速器就用它们，否则用 8 个模拟的 CPU 设备，并告诉你用的是哪种。",
    },
    "answer_label": {
        "en": "Your answer goes in this cell, in the notebook.",
        "zh": "你的答案写在笔记本的这个单元格里。",
    },
    "check_label": {
        "en": "This check runs your answer: in the notebook it says what to fix, or that the exercise passes.",
        "zh": "这个检查会运行你的答案：在笔记本中，它会告诉你该改什么，或者告诉你练习已通过。",
    },
    "solved_label": {
        "en": "With correct answers, this cell shows:",
        "zh": "答案正确时，这个单元格显示：",
    },
}


def text(key: str, edition: str, **values: str) -> str:
    """TEXT[key] in `edition`, with its placeholders filled."""
    return TEXT[key][edition].format(**values)
