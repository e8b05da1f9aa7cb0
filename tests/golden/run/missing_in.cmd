run scale.tile --arg s=2.5
