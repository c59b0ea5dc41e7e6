"""Helpers of the serving benchmark (bench/serve_openai.py); not benchmarks themselves."""
