"""placeholder"""
import click
figures_command = click.Command("figures")
