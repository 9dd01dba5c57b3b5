"""How the pages show each figure when its role gives no format spec.

A page writes ``{fig}`llama70_q4km_gb``` and shows 42.7: the name's spec below, ``.1f``, formats
it (gpulab.course.figures.format_figure). A role that needs another precision says so after a
":" (``{fig}`llama70_q4km_gb:.2f```), which overrides this table. A figure that is an int or a
str needs no entry; a float without one shows as Python prints it.
"""

from __future__ import annotations

from gpulab.core.validate import checked

__all__ = ["FORMATS", "default_format"]

# format spec -> the figures it formats, by name
FORMATS: dict[str, tuple[str, ...]] = {
    ".1f": tuple(
        """
        sd35m_params_b sd35m_pass_tflop sd35m_rtx4090_min_s claim75_medium_gpu_needs_x_peak
        claim75_medium_cpu_needs_x_peak
        a100_40_usable_gb a100_80_usable_gb a100_vs_4090_bandwidth_x act_ckpt_batch_gb
        article_4090_cny_h article_bw_ratio article_kwh_cny
        article_week_hours_h attn_ctx2_gflop attn_ctx2_vs_2n batch_b1_mem_ms batch_b64_compute_ms
        batch_b64_kv_gb batch_b64_mem_ms batch_b64_read_gb batch_full2048_compute_ms
        batch_full2048_kv_gb batch_full2048_mem_ms batch_full2048_read_gb
        batch_full8192_compute_ms batch_full8192_kv_gb batch_full8192_mem_ms
        bits_for_70b_in_rtx4090 break_even_a100_months break_even_rule_years
        buy_pays_off_hours_per_day claim59_xformers_s claim74_ratio claim75_gpu_s comfyui_after_s
        comfyui_before_s comfyui_ratio company30_kv_gb company30_needed_gb company5_kv_gb
        company5_needed_gb company_weights_gb cuda_context_gib ddr4_3200_gbs ddr5_4800_gbs
        ddr5_5600_gbs ddr5_channel_low_gbs decode_ddr5_tok_s decode_rtx4090_ms
        llama8_bf16_rtx4090_bound_tok_s ecore_allcore_ghz ecore_base_ghz ecore_maxturbo_ghz
        electricity_day_cny electricity_year_board_power_cny electricity_year_cny
        embed_10000_pflop embed_50000_pflop epyc_gbs eth100_gbs fa3_speedup_high_x
        fa3_speedup_low_x gtx1650_gddr5_ratio_hi gtx1650_gddr5_ratio_lo gtx1650_gddr6_ratio_lo
        h100_bf16_over_fp32 h100_bf16_tflops
        h100_cache_room_gb h100_fp16_tflops h100_fp32_tflops h100_fp8_tflops h100_usable_gb
        h100_vs_4090_bandwidth_x h100_vs_5090_bandwidth_x h200_bandwidth_tbs h200_bf16_tflops
        h200_usable_gb h200_vs_4090_bandwidth_x laptop_fp16_bound_hi laptop_fp16_bound_lo
        laptop_q4km_bound_hi laptop_q4km_bound_lo levers_all_gb levers_naive_gb linear_big_cpu_ms
        linear_gflop linear_gpu_ns_per_sample linear_total_mb linear_w_mb linear_x_mb linear_y_mb
        llama32_1b_layers_act_bf16_gb llama32_1b_layers_act_fp32_gb llama32_1b_logits_gb
        llama32_1b_states_gb llama3b_rtx4060ti_vs_cpu_x llama3b_rtx4090_vs_cpu_x
        llama70_all_logits_gb llama70_fp16_gb llama70_full_ft_cards_worth
        llama70_handover_pcie4_us llama70_head_norm_gb llama70_int4_2k_need_gb
        llama70_int4_gb
        llama70_int4_matrices_gb llama70_int4_need_gb llama70_int4_offload_tok_s
        llama70_int4_per_card_gb llama70_int4_read_gb llama70_int4_4k_read_gb
        llama70_int4_rtx4090_bound_tok_s llama70_int4_two_3090_tok_s llama70_kept16_at_int4_gb
        llama70_kept16_gb llama70_kv_128k_gb llama70_kv_8k_mha_gb llama70_kv_users_gb
        llama70_kv_users_over_q4km llama70_over_r1_kv
        llama70_q4km_4k_read_gb llama70_q4km_rtx4090_4k_bound_tok_s llama70_q4km_gb
        llama70_q4km_layer_mb llama70_q4km_layer_read_mb llama70_kv_4k_layer_mb
        llama70_q4km_left_two_3090_gb
        llama70_q4km_need_gb llama70_q4km_offload_tok_s llama70_q4km_read_gb
        llama70_split_vs_offload llama70_tp2_nvlink_tok_s
        llama70_tp2_pcie_tok_s llama7_forward_gflop_per_token
        llama7_fp16_m3ultra_bound_tok_s llama7_fp16_need_gb
        llama7_fp16_rtx4090_bound_tok_s llama7_fp16_rtx4090_1k_bound_tok_s
        llama7_fp16_rx7900xtx_bound_tok_s llama7_grad_gb
        llama7_q4km_need_gb
        llama8_2n_gflop llamacpp_f16_tok_s llamacpp_q4_0_tok_s loader_per_worker_ms lora_nvlink_ms
        lora_params_m lora_pcie4_ms mi300x_usable_gb mxfp4_shrink nf4_plain_bits ngl_fit_float
        nvfp4_bpw nvfp4_shrink nvme4_70b_s nvme4_7b_s
        offload_full_ms offload_gpu_ms
        offload_pcie_tok_s offload_slowdown
        offload_wc_gb offload_wg_gb pcie3_x16_gbs pcie4_x16_gbs pcie5_x16_gbs pcore_allcore_ghz
        pcore_base_ghz pcore_maxturbo_ghz peak_usable_gb personal_needed_gb
        phi3_gtx1650_bound_tok_s prefill_matmul_tflop q4k_bits q8_bits qwen72_fp16_gb
        qwen72_fp16_need_gb qwen72_fp16_read_gb qwen72_fp16_rtx4090_bound_tok_s r1_active_b
        r1_int4_gb r1_int4_read_gb r1_kv_128k_gb
        ratio_fp16_int4 ratio_fp16_q4km rent4090_week_cny
        rtx3060_bf16_derived_tflops rtx3060_bf16_tflops rtx3090_bf16_tflops
        rtx3090_fp16_fp16acc_tflops rtx3090_fp16_tflops rtx3090_nvlink_both_gbs
        rtx4060ti_vs_ddr5_ratio rtx4090_bf16_tflops
        rtx4090_fp16_fp16acc_tflops rtx4090_fp16_tflops rtx4090_fp16acc_derived_tflops
        rtx4090_fp32_derived_tflops rtx4090_fp32_tflops rtx4090_fp8_tflops
        rtx4090_observed_peak_tflops rtx4090_over_3060_bf16 rtx4090_over_3060_bw
        rtx4090_tf32_tflops rtx4090_usable_gb rtx4090_vs_ddr5_ratio rtx5090_bf16_tflops
        rtx5090_fp16_tflops sata_gbs sata_payload_gbit_s scores_128k_tb sd35_attention_tflop
        sd35_matmul_tflop sd35_params_b sd35_pass_tflop sd35_rtx4090_fp16acc_min_s
        sd35_rtx4090_min_s sd_time_a_s sdxl_unet_params_b server_gbs split_us_on_pcie
        team_needed_gb tier14_q4km_gb
        tier32_int4_gb tier32_left_hi_gb tier32_left_lo_gb tier32_q4km_gb
        tier3_q4km_gb
        tier70_plain4_gb llama7_int4_left_gb tier7_q4km_gb
        timing_least_ms tinygrad_busbw_gbs tp2_nvlink_gain_pct tp_read_per_card_ms
        train_scores_8k_layer_gb two_3090_usable_gb two_4090_available_gb two_a100_usable_gb
        two_h100_usable_gb zero3_vs_dp_traffic_ratio
        llama7_zero1_gb llama7_zero2_gb llama7_zero3_gb
    """.split()
    ),
    ".0f": tuple(
        """
        a100_40_count_gb a100_80gb_memory_gb a100_nvlink_both_gbs a100_nvlink_gbs a10_memory_gb
        act_fused_batch_gb add_4090_gflops allreduce_factor_2
        article_cpu_gflops article_factor_hi article_gpu_tflops article_ratio b200_fp16_over_fp16
        b200_fp4_over_fp16 b200_fp4_over_fp8 b200_fp4_vs_fp16_x b200_fp8_over_fp16
        batch_full2048_user_tok_s batch_gain bert_chunk_exact_gflop bert_chunk_gflop
        bert_matrix_params_m bert_params_m bf16_adamw_bytes bf16_ratio_allcore bf16_ratio_base
        bf16_ratio_maxturbo bw_ratio_4800 chain_fusion_speedup_x
        claim75_cpu_needs_x_peak claim75_gpu_needs_x_peak claim75_ratio company30_rtx5090_tok_s
        company5_first_gpu_memory_gb core_count_ratio cpu_allcore_e_gflops cpu_allcore_p_gflops
        cpu_allcore_ridge cpu_base_e_gflops cpu_base_p_gflops cpu_base_ridge cpu_maxturbo_e_gflops
        cpu_maxturbo_p_gflops decode_4090_tok_s decode_intensity decode_vs_prefill_per_token
        doctor_low_ram_gib doctor_low_vram_gib embed_1000000_pflop embed_ratio_hi embed_ratio_lo
        eth100_gbit_s eth400_gbit_s eth400_gbs fa2_h100_tflops finetune_lora_rtx4090_h
        finetune_rtx4090_h four_a100_usable_gb fp32_adamw_bytes fp32_bits fp32_ratio_allcore
        fp32_ratio_base fp32_ratio_maxturbo fp4_naive_shrink ft70_8x_h100_gb
        gpu_excursion_x gtx1650_data_rate_gbps gtx1650_gddr6_gbps gtx1650_memory_gib
        guide_low_free_ram_gib guide_low_free_vram_gib h100_nvlink_both_gbs h100_nvlink_gbs
        h100_nvlink_vs_ndr h100_ridge_flop_per_byte h200_memory_gb hdd_70b_s hdd_7b_s hdd_mbs
        ib_hdr_gbit_s ib_hdr_gbs ib_ndr_gbit_s ib_ndr_gbs lanes_per_pcore linear_bias_mflop
        linear_big_gpu_us linear_intensity linear_samples_per_us llama3b_cpu_tok_s
        llama3b_prompt_rtx4060ti_ms llama3b_prompt_rtx4060ti_vs_cpu_x llama3b_rtx4060ti_tok_s
        llama3b_rtx4090_tok_s llama70_int4_2k_two_4090_layer_tok_s
        llama70_int4_2k_two_4090_tensor_tok_s llama70_int4_h200_bound_tok_s
        llama70_q4km_two_4090_tok_s llama70_tp_message_kib llama7_full_finetune_gb
        llama7_q4km_rtx4090_bound_tok_s
        llama8_kv_kib_per_token
        llm_bf16_gb llm_params_b lora_grad_mb matmul_n_fp16 mixed_adam8_bytes
        mixed_adamw_bytes offload_cpu_total_ms offload_pcie_ms
        offload_pcie_total_ms offload_ram_ms pcie3_gt_s pcie4_gt_s pcie4_gts
        pcie5_gt_s pcore_allcore_gflops personal_rtx3060_tok_s personal_rtx4060ti_tok_s
        pp_boundary_mb pretrain_days psu_sustained_w psu5090_sustained_w psu5090_peak_w
        psu5090_min_for_peak_w default_cpu_power_w
        r1_article_int4_bits r1_fp16_gb r1_fp8_gb r1_int4_h200_bound_tok_s r1_h200_left_gb
        r1_int4_need_gb r1_int4_rtx4090_bound_tok_s
        r1_params_b r1_q4km_35_layers_gb r1_q4km_gb rest_of_system_w
        ridge_4090_bf16 ridge_4090_fp32 ridge_h200_bf16 rtx3060_data_rate_gbps
        rtx3060_over_ddr5_bw rtx3090_memory_gb
        rtx4060ti_gbs rtx4090_bf16_over_fp32 rtx4090_board_w rtx4090_data_rate_gbps
        rtx4090_derived_gbs rtx4090_gbs rtx4090_vs_pcie4_x rtx5090_fp16_fp16acc_tflops
        rtx5090_fp4_over_bf16 rtx5090_fp4_over_fp16 rtx5090_fp4_vs_bf16_x rtx5090_fp4_vs_fp16acc_x
        rtx5090_gbs rtx5090_memory_gb sata_7b_s sata_line_gbit_s scores_term_2048 scores_term_512
        scores_term_8192 scores_total_2048 scores_total_512 scores_total_8192 sd35_cpu_min_min
        sd35_turbo_image_tflop sd_time_b_s server_over_desktop_hi server_over_desktop_lo
        team_tok_s_per_user tier671_fp16_gb tier70_fp16_gb
        tier7_bf16_adamw_gb tier7_fp16_gb tier7_mixed_adam8_gb tier7_mixed_adamw_gb timing_bad_ms
        timing_bad_vs_peak_x tinygrad_message_mib tp_allreduce_mb tp_talk_pcie4_us
        train_bytes_per_param train_scores_8k_model_gb years_of_use
            laptop_llama_minutes
    """.split()
    ),
    ".2f": tuple(
        """
        a100_80_driver_gb a100_80_runtime_gb allreduce_factor_8 article_cpu_s
        article_factor_lo article_power_kw attn_ctx0_gflop attn_ctx1_gflop
        cpu_allcore_tflops cpu_base_tflops cpu_maxturbo_tflops days_per_month embed_laptop_tflops
        estimator_heldout_worst_pct
        gtx1650_gddr6_ratio_hi gtx1650_memory_gb gtx1650_usable_gb h100_bandwidth_tbs
        h100_driver_gb h100_runtime_gb l4_driver_gb l4_runtime_gb l4_usable_gb lane_gflops
        linear_cpu_us_per_sample linear_mflop_per_sample llama3b_prompt_cpu_s llama70_45_needs_tbs
        llama70_full_ft_states_tb llama70_head_norm_params_b llama70_kept16_params_b
        llama70_kv_4k_gb llama70_kv_8k_gb llama70_params_b llama70_quantized_params_b
        llama7_fp16_gb llama7_fp16_read_gb llama7_fp16_1k_read_gb llama7_grad_nvlink_s
        llama7_grad_pcie4_s llama7_int4_512_need_gb llama7_int4_gb llama7_matmul_params_b
        llama7_params_b llama7_q4km_512_need_gb llama7_q4km_gb llama7_q4km_read_gb
        llama7_train_flops_e22 llama8_allreduce_nvlink_s llama8_allreduce_pcie_s
        llama8_bf16_read_gb llama8_bf16_gb llama8_matmul_params_b
        m3ultra_article_vs_rtx4090 m3ultra_bw_vs_rtx4090 mxfp4_bpw nvme4_gbs pcie4_lane_gbs
        pcie5_lane_gbs phi3_params_b phi3_q4km_gb phi3_q4km_read_gb pretrain_seconds_e7 q4km_bits
        qwen72_params_b r1_fp16_over_eight_gb r1_hop_us rtx3090_driver_gb rtx3090_nvlink_gbs
        rtx3090_runtime_gb rtx3090_usable_gb rtx4090_boost_ghz rtx4090_driver_gb
        rtx4090_runtime_gb rx7900xtx_article_vs_rtx4090 rx7900xtx_bw_vs_rtx4090 scores_8k_gb
        sd35_params_from_shapes_b sd35_stream_params_b sd_fixed_s sd_naive_a_s sd_naive_b_s
        sd_turbo_hi_s sd_turbo_lo_s t4_driver_gb t4_runtime_gb t4_usable_gb tier13_q4km_gb
        timing_tflop tp_allreduce_pcie4_us
            zh_tokens_per_char
    """.split()
    ),
    ".0%": tuple(
        """
        allocator_slack article_cpu_share_allcore article_cpu_share_base
        article_cpu_share_maxturbo article_drop_hi article_drop_lo article_fa3_share_of_h100_peak
        article_fa3_vs_fa2 article_fraction_hi article_fraction_lo article_gpu_share
        article_share_of_fp16_bound_max article_share_of_fp16_bound_min
        article_share_of_q4km_bound_max article_share_of_q4km_bound_min article_xformers_saving
        attn_ctx0_vs_2n attn_ctx1_vs_2n bf16_layers_act_share claim74_share
        claim75_turbo_cpu_share claim75_turbo_gpu_share doctor_busy_share doctor_other_share
        embed_desktop_share_hi embed_desktop_share_lo embed_gpu_share fa2_h100_utilisation
        fa3_share_of_h100_peak guide_other_processes_share laptop_claim_share
        laptop_claim_share_q4km llama31_mfu_hi llama31_mfu_lo llama70_int4_rtx4090_claim_share
        llama7_fp16_m3ultra_claim_share llama7_fp16_rtx4090_claim_share
        llama7_fp16_rx7900xtx_claim_share llama7_q4km_rtx4090_claim_share mfu_assumed offload_drop
        offload_fraction phi3_claim_share prefill_attention_share
        psu_excursion_x q8_over_q4km qwen72_fp16_rtx4090_claim_share r1_int4_rtx4090_claim_share
        r1_vs_dense_read rtx4090_observed_over_boost scores_share_2048 scores_share_512
        scores_share_8192 tinygrad_share_of_pcie4
    """.split()
    ),
    ",d": tuple(
        """
        article_build_cny attn_hidden attn_seq b200_bf16_tflops b200_fp16_tflops b200_fp4_tflops
        b200_fp8_tflops b200_power_w batch_b64_ctx batch_full2048_ctx batch_full8192_ctx
        cpu_check_prompt_tokens laptop_characters laptop_tokens linear_big_batch llama31_context
        llama32_1b_params llama32_1b_vocab llama70_attention_params_per_layer llama70_ffn
        llama70_handover_bytes llama70_kv_width llama70_layer_kv_params llama70_layer_mlp_params
        llama70_layer_norm_params llama70_layer_params llama70_layer_qo_params llama70_params
        llama70_vocab llama7_kv_bytes_per_token llama7_kv_ctx llama7_params
        llama8_kv_bytes_per_token ngl_context_tokens offload_context oom_seq oom_tokens
        r1_hop_bytes r1_kv_bytes_per_token rtx3090_gbs rtx4090_cuda_cores
        rtx5090_sparse_fp4_tops split_bytes_per_token
    """.split()
    ),
    ",.0f": tuple(
        """
        sd35m_image_tflop sd35m_cpu_min_s
        a100_80_driver_mib a100_year_cny batch_b1_tok_s batch_b64_tok_s batch_full2048_tok_s
        batch_full8192_tok_s finetune_rtx4090_s ft70_peak_gb gtx1650_gddr5_gbs gtx1650_gddr6_gbs
        h100_driver_mib h100x8_bf16_tflops l4_driver_mib llama70_kv_bytes_per_token
        pretrain_cluster_tok_s rent4090_year_cny rtx3060_price_usd rtx3090_driver_mib
        rtx4060ti_price_usd rtx4090_driver_mib rtx4090_observed_clock_high_mhz
        rtx4090_observed_clock_low_mhz rtx5090_fp4_tflops sd35_cpu_min_s sd35_image_tflop
        t4_driver_mib timing_bad_tflops
            laptop_llama_tokens
    """.split()
    ),
    ".3f": tuple(
        """
        add_intensity article_gpu_s asym_bits batch_b1_compute_ms fp8_bits gib_in_gb int4_bits
        nf4_dq_bits pcie3_lane_gbs prefill_rtx4090_ms_per_token prefill_rtx4090_s
        rtx3060_boost_ghz sd_half_step_s sd_step_s
    """.split()
    ),
    "g": tuple(
        """
        a100_bf16_tflops a100_fp16_tflops m3ultra_gbs rx7900xtx_gbs t4_fp16_tflops
    """.split()
    ),
    "+.1%": tuple(
        """
        a100_80_over_marketed h100_over_marketed l4_over_marketed rtx3090_over_marketed
        t4_over_marketed
    """.split()
    ),
    ".1%": tuple(
        """
        add_share_of_peak power_cap_share rtx4090_over_marketed
    """.split()
    ),
    ".4f": tuple(
        """
        q6k_bits
    """.split()
    ),
}

_BY_NAME = {name: spec for spec, names in FORMATS.items() for name in names}


@checked
def default_format(name: str) -> str:
    """The format spec a page uses for figure `name` when its role gives none ("" if none)."""
    return _BY_NAME.get(name, "")
