/** Every test file: keep Powertools quiet (tests that check metrics output re-enable it). */
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
